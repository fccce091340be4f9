import { ConfigError, hashSeed, playEpisode, resolveEnvConfig, seededRandom, type EnvironmentDefinition, type GameItem } from 'clotho';
import { describe, expect, it } from 'vitest';
import adventure from './adventure.js';
import blackjack from './blackjack.js';
import games, { type GamesItem } from './index.js';
import { adventurePlan, taxiPlan } from './solve.js';
import taxi, { taxiGame } from './taxi.js';

const load = async (argv: string[] = []) => games.load(resolveEnvConfig(games, argv));

describe('games (all three behind --env.game)', () => {
  it('takes the games in turn by default, or one of them, each item seeded from (seed, index)', async () => {
    expect(resolveEnvConfig(games, [])).toMatchObject({ game: 'all', seed: 0, offer_tools: true, max_turns: 201, max_token_length: 8192 });
    const mixed = await load();
    expect([0, 1, 2, 3].map((i) => mixed.get(i).game)).toEqual(['blackjack', 'taxi', 'adventure', 'blackjack']);
    expect(mixed.get(4)).toEqual({ game: 'taxi', index: 4, seed: hashSeed(0, 4) });
    const onlyTaxi = await load(['--env.game', 'taxi', '--env.seed', '5']);
    expect([0, 1, 2].map((i) => onlyTaxi.get(i))).toEqual([0, 1, 2].map((index) => ({ game: 'taxi', index, seed: hashSeed(5, index) })));
    expect(() => resolveEnvConfig(games, ['--env.game', 'chess'])).toThrow(ConfigError);
    // A game's own options belong to its own environment; here every game plays by its default rules.
    expect(() => resolveEnvConfig(games, ['--env.natural'])).toThrow(ConfigError);
  });

  it("prompts, offers tools and starts exactly as each game's own environment does", async () => {
    const mixed = await load();
    const own: Record<string, EnvironmentDefinition<GameItem, null, any>> = { blackjack, taxi, adventure };
    for (const i of [0, 1, 2]) {
      const item = mixed.get(i);
      const env = own[item.game]!;
      const config = resolveEnvConfig(env, []);
      expect(games.prompt(item, resolveEnvConfig(games, []))).toEqual(env.prompt(item, config));
      expect(await games.tools!(item, resolveEnvConfig(games, []))).toEqual(await env.tools!(item, config));
      expect(games.initialState!(item, 0, resolveEnvConfig(games, []))).toEqual(env.initialState!(item, 0, config));
    }
  });

  it('plays and scores each game by its own rules', async () => {
    const mixed = await load();
    const taxiItem = mixed.get(1) as GamesItem;
    const start = taxiGame.start({ seed: taxiItem.seed, config: resolveEnvConfig(taxi, []), random: seededRandom(taxiItem.seed) });
    const plan = taxiPlan(start);
    const driven = await playEpisode(games, { item: taxiItem, replies: plan });
    expect(driven).toMatchObject({ score: 21 - plan.length, metrics: { delivered: 1, finished: 1 } });

    const adventureItem = mixed.get(2) as GamesItem;
    const route = adventurePlan(adventureItem.seed, resolveEnvConfig(adventure, []))!;
    const walked = await playEpisode(games, {
      item: adventureItem,
      replies: route.map((c) => `${c.name} ${Object.values(c.arguments).join(' ')}`),
    });
    expect(walked).toMatchObject({ score: 21 - route.length, metrics: { won: 1 } });

    const hand = await playEpisode(games, { item: mixed.get(0), replies: ['sing'] });
    expect(hand).toMatchObject({ score: -1, turns: 1, metrics: { invalid_actions: 1, loss: 1 } });
  });
});
