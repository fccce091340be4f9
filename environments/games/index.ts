import { defineEnvironment, GAME_CONFIG, hashSeed, z, type EnvironmentDefinition, type GameItem, type GameSlot } from 'clotho';
import adventure from './adventure.js';
import blackjack from './blackjack.js';
import taxi from './taxi.js';

/** The games, by the name `--env.game` takes. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each game has its own config shape
export const GAMES = { blackjack, taxi, adventure } as const satisfies Record<string, EnvironmentDefinition<GameItem, null, any>>;
/** `blackjack`, `taxi` or `adventure`. */
export type GameName = keyof typeof GAMES;
const NAMES = Object.keys(GAMES) as GameName[];

/** An episode of one of the games. */
export interface GamesItem extends GameItem {
  game: GameName;
}

// Each game's own fields at their defaults: the mix plays every game by its standard rules.
const ownDefaults = Object.fromEntries(NAMES.map((name) => [name, z.object(GAMES[name].config).parse({})])) as Record<GameName, object>;
/** The config a game's hooks get: its own fields at their defaults, then this environment's (base fields, seed, …). */
const configFor = (game: GameName, config: object): never => ({ ...ownDefaults[game], ...config }) as never;
/** The item's game; its state slot holds that game's state, whichever game it is. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each game has its own config shape (configFor gives it)
const gameOf = (item: GamesItem): EnvironmentDefinition<GameItem, null, any, GameSlot<unknown>> => GAMES[item.game];

/**
 * Blackjack, Taxi and the text adventure behind one name: `--env.game` picks one, or `all` (the default) takes them in
 * turn (item i plays game i mod 3). Each game is played by its default rules; for its own options (`natural`,
 * `rooms`, …) run the game's environment (`blackjack`, `taxi`, `text_adventure`).
 */
export default defineEnvironment({
  name: 'games',
  description: "Blackjack and Taxi (Gymnasium's rules and rewards) and a generated text adventure, one action per turn",
  config: {
    game: z
      .enum([...NAMES, 'all'])
      .default('all')
      .describe('the game to play, or all of them in turn'),
    ...GAME_CONFIG,
  },
  defaults: { max_turns: 201, max_token_length: 8192, group_size: 8 },

  async load(config) {
    const games = config.game === 'all' ? NAMES : [config.game];
    const get = (index: number): GamesItem => ({ game: games[index % games.length]!, index, seed: hashSeed(config.seed, index) });
    return { size: config.size, get };
  },

  // Every hook is the item's game's own, with that game's fields at their defaults beside this config.
  prompt: (item, config) => gameOf(item).prompt(item, configFor(item.game, config)),
  tools: (item, config) => gameOf(item).tools!(item, configFor(item.game, config)),
  initialState: (item, sample, config) => gameOf(item).initialState!(item, sample, configFor(item.game, config)),
  step(context, config) {
    const own = configFor(context.item.game, config);
    return gameOf(context.item).step!({ ...context, config: own }, own);
  },
  parse: () => null,
  score: (context) => gameOf(context.item).score({ ...context, config: configFor(context.item.game, context.config) }),
});
