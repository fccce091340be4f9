/**
 * Game environments: a turn-based game (cards, a grid world, a text adventure) played by the model one action per
 * turn, as text or as a tool call, with the game's own rewards. {@link defineGame} turns a game's rules into an
 * environment whose whole game state lives in the trajectory's state slot, so every step is as durable as any
 * `step`: a worker that dies mid-game resumes at the turn it reached, with the same cards still to come.
 */
import { z } from 'zod';
import type { BaseEnvConfig } from '../../config/schemas.js';
import type { Message } from '../../schema/scored-data.js';
import type { EnvConfig, EnvironmentDefinition, JsonSafe } from '../../env/define.js';
import { hashSeed, seededRandom, type SeededRandom } from '../../env/random.js';
import {
  actionTools,
  actionUsage,
  commandFromCall,
  parseCommand,
  readMove,
  type GameAction,
  type GameCommand,
  type Unreadable,
} from './moves.js';

/** Config fields every game has, beside its own. */
export const GAME_CONFIG = {
  seed: z.number().int().default(0).describe('names the episodes: item i starts from a seed derived from (seed, i)'),
  size: z.number().int().positive().default(1_000_000).describe('episodes per epoch; item i is episode i mod size'),
  offer_tools: z.boolean().default(true).describe('offer the actions as tools too (text commands are always read)'),
};

/** A game's resolved config: base fields, {@link GAME_CONFIG} and its own. */
export type GameConfig<Extra extends z.ZodRawShape = Record<never, never>> = EnvConfig<typeof GAME_CONFIG> & z.infer<z.ZodObject<Extra>>;

/** One episode: its index and the seed it starts from. Every sample of a group starts the same game. */
export interface GameItem {
  index: number;
  seed: number;
}

/** What a game's functions get besides its state. */
export interface GameContext<Config> {
  config: Config;
  /** The episode's seed, the same for every sample of the group: derive fixed parts (a world) from it. */
  seed: number;
  /** The episode's generator (cards to come); the loop keeps its state in the slot between turns. */
  random: SeededRandom;
}

/** What one action did. */
export interface GameOutcome<State> {
  state: State;
  reward: number;
  /** The game is over (won, lost, delivered). */
  done: boolean;
  /** The game's answer, shown before the new observation (`You drew a 7.`). */
  message: string;
}

/** The rules of a turn-based game; {@link defineGame} makes an environment of them. */
export interface Game<State, Extra extends z.ZodRawShape> {
  name: string;
  description: string;
  /** The game's own config fields (`--env.<field>`), beside {@link GAME_CONFIG}. */
  config: Extra;
  /** Base-field defaults; `max_turns` is 100 unless set here (one more than a step limit lets the game end it). */
  defaults?: Partial<BaseEnvConfig>;
  /** Offered as tools and read from text. */
  actions: readonly GameAction[];
  /** The rules as the model reads them in the system prompt; the loop adds the actions and how to reply. */
  rules(config: GameConfig<Extra>): string;
  /** The start of an episode. The state must be JSON-safe: it is stored after every turn. */
  start(context: GameContext<GameConfig<Extra>>): State;
  /** What the player sees of a state: the first user message, and the end of every answer while the game goes on. */
  observe(state: State, context: GameContext<GameConfig<Extra>>): string;
  /** Plays a command. The state is the loop's copy: change it or return a new one. */
  play(state: State, command: GameCommand, context: GameContext<GameConfig<Extra>>): GameOutcome<State>;
  /** What a reply that holds no action does: the game's penalty, and whether the game ends. Never throws. */
  unreadable(state: State, problem: string, context: GameContext<GameConfig<Extra>>): GameOutcome<State>;
  /** Steps after which the game ends unfinished (Gymnasium's TimeLimit); no limit when absent or null. */
  maxSteps?(config: GameConfig<Extra>): number | null;
  /** Reads a text command; `parseCommand(text, actions)` when absent. */
  parseText?(text: string, config: GameConfig<Extra>): GameCommand | Unreadable;
  /** Metrics of the final state, beside the loop's own. */
  metrics?(state: State, context: GameContext<GameConfig<Extra>>): Record<string, number>;
}

/** The trajectory's state slot of a game: the game's state and the loop's bookkeeping, JSON-safe. */
export interface GameSlot<State> {
  game: State;
  /** The generator's state after the last turn. */
  random: number;
  steps: number;
  /** The return so far: the sum of the game's rewards. */
  reward: number;
  /** Replies that held no action. */
  invalid: number;
  done: boolean;
  /** Ended by the step limit rather than by the game. */
  timedOut: boolean;
}

/**
 * The trajectory's slot as the store gave it back; one without a game is an infrastructure fault (retried, then the
 * group fails), never a score.
 */
function checked<State>(slot: GameSlot<State>): GameSlot<State> {
  if (typeof slot !== 'object' || slot === null || !('game' in slot))
    throw new Error(`the trajectory's state slot holds no game: ${JSON.stringify(slot)}`);
  return slot;
}

const signed = (n: number): string => (n > 0 ? `+${n}` : String(n));

/** The system prompt: the game's rules, its actions, and how to reply. */
function systemPrompt<Extra extends z.ZodRawShape>(
  game: Pick<Game<unknown, Extra>, 'rules' | 'actions'>,
  config: GameConfig<Extra>,
): string {
  const example = game.actions[0]!.example ?? actionUsage(game.actions[0]!);
  const how = config.offer_tools
    ? 'call one of the tools, or write the command as the last line of your reply'
    : 'write the command as the last line of your reply';
  return [
    game.rules(config),
    `Actions:\n${game.actions.map((a) => `- ${actionUsage(a)}: ${a.description}`).join('\n')}`,
    `Take exactly one action per turn: ${how} (or inside <action></action>), for example \`${example}\`. ` +
      'A reply without a readable action is penalised.',
  ].join('\n\n');
}

/**
 * An environment that plays a game: item i is an episode started from `hashSeed(seed, i)`, the prompt is the rules
 * and the first observation, each assistant turn is read as one action (a tool call, else a text command), played,
 * and answered with the game's message, the turn's reward and the new observation (a `tool` message answering the
 * call, else a `user` message). The game's state, its generator and the return so far are the trajectory's state
 * slot; the score is the return, the sum of the game's rewards.
 */
export function defineGame<State, Extra extends z.ZodRawShape>(
  game: Game<State, Extra> & { start(context: GameContext<GameConfig<Extra>>): JsonSafe<State> },
): EnvironmentDefinition<GameItem, null, typeof GAME_CONFIG & Extra, GameSlot<State>> {
  type Config = GameConfig<Extra>;
  // The definition's config type is the generic intersection, which TypeScript cannot look into; it is this one.
  const of = (config: unknown) => config as Config;
  const contextOf = (seed: number, random: number, config: Config): GameContext<Config> => ({ config, seed, random: seededRandom(random) });
  const begin = (item: GameItem, config: Config) => {
    const context = contextOf(item.seed, item.seed, config);
    return { context, state: game.start(context) };
  };
  const readText = (text: string, config: Config) => (game.parseText ? game.parseText(text, config) : parseCommand(text, game.actions));

  return {
    name: game.name,
    description: game.description,
    config: { ...GAME_CONFIG, ...game.config },
    // A game takes many turns: without a max_turns of its own it would get Clotho's single-turn default.
    defaults: { max_turns: 100, ...game.defaults },
    async load(resolved) {
      const { size, seed } = of(resolved);
      return { size, get: (index: number) => ({ index, seed: hashSeed(seed, index) }) };
    },
    prompt(item, resolved) {
      const config = of(resolved);
      const { context, state } = begin(item, config);
      return [
        { role: 'system', content: systemPrompt(game, config) },
        { role: 'user', content: game.observe(state, context) },
      ];
    },
    tools: (_item, config) => (of(config).offer_tools ? actionTools(game.actions) : []),
    initialState(item, _sample, config) {
      const { context, state } = begin(item, of(config));
      return { game: state, random: context.random.state, steps: 0, reward: 0, invalid: 0, done: false, timedOut: false };
    },
    step({ item, messages, state, turn }, resolved) {
      const config = of(resolved);
      const slot = checked(state);
      if (slot.done) return { messages: [], done: true, reward: 0 };
      const context = contextOf(item.seed, slot.random, config);
      const reply = messages.findLast((m) => m.role === 'assistant') ?? {};
      const move = readMove(reply, `call-${turn}`);
      const command =
        move.kind === 'call'
          ? commandFromCall(move.call, game.actions)
          : move.kind === 'text'
            ? readText(move.text, config)
            : { problem: move.problem };
      const current = structuredClone(slot.game);
      const outcome = 'problem' in command ? game.unreadable(current, command.problem, context) : game.play(current, command, context);
      const steps = slot.steps + 1;
      const reward = slot.reward + outcome.reward;
      const limit = game.maxSteps?.(config) ?? null;
      const timedOut = !outcome.done && limit !== null && steps >= limit;
      const done = outcome.done || timedOut;
      const next: GameSlot<State> = {
        game: outcome.state,
        random: context.random.state,
        steps,
        reward,
        invalid: slot.invalid + ('problem' in command ? 1 : 0),
        done,
        timedOut,
      };
      const end = timedOut ? `The game is over: it ends after ${limit} steps.` : 'The game is over.';
      const answer = `${outcome.message}\nReward ${signed(outcome.reward)}, total ${signed(reward)}.\n\n${done ? end : game.observe(outcome.state, context)}`;
      const replies: Message[] =
        move.kind === 'call'
          ? [
              { role: 'tool', tool_call_id: move.call.id, name: move.call.name, content: answer },
              ...move.extra.map((c) => ({ role: 'tool', tool_call_id: c.id, name: c.name, content: 'Not played: one action per turn.' })),
            ]
          : [{ role: 'user', content: answer }];
      return { messages: replies, done, state: next, reward: outcome.reward };
    },
    parse: () => null,
    score({ item, state, config }) {
      const slot = checked(state);
      const context = contextOf(item.seed, slot.random, of(config));
      return {
        score: slot.reward,
        metrics: {
          steps: slot.steps,
          invalid_actions: slot.invalid,
          finished: slot.done && !slot.timedOut ? 1 : 0,
          timed_out: slot.timedOut ? 1 : 0,
          ...game.metrics?.(slot.game, context),
        },
      };
    },
  };
}
