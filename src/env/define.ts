import type { z } from 'zod';
import type { BaseEnvConfig } from '../config/schemas.js';
import type { Message } from '../schema/scored-data.js';
import type { HarnessOutcome, HarnessSpec } from './harness.js';
import { combineRewards, type RewardEntry, type RewardFn } from './rewards.js';
import type { Tool, ToolCallRequest, MalformedToolCall } from './tools.js';

/**
 * Items of an environment, addressed by index so that item i is the same on every worker and retry. Clotho alone wraps
 * indices: the run's item i is `get(i % size)`, so an epoch past the end starts again at 0 and `get` never sees an
 * index outside its items. For an array, {@link fromItems} makes one.
 */
export interface ItemSource<Item> {
  /** Number of distinct items: a positive whole number. */
  readonly size: number;
  /** Item `index`, where 0 ≤ `index` < `size` always (the runtime wraps; `get` need not). */
  get(index: number): Item;
}

/**
 * The {@link ItemSource} of items held in memory, what `load` returns for a data set read whole:
 * `load: async () => fromItems(await loadJsonl(path, RowSchema))`. The array is used as it is, not copied.
 */
export function fromItems<Item>(items: readonly Item[]): ItemSource<Item> {
  return { size: items.length, get: (index) => items[index]! };
}

/** A value or a promise of it: every environment function may be async. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * What a long-running environment function can do while it runs: heartbeat (so that a worker that dies is
 * noticed within the step's heartbeat timeout) and see cancellation (the group was cancelled, or the attempt
 * timed out).
 */
export interface Liveness {
  /** Aborted when the step is cancelled; pass it to `fetch` and child processes. */
  signal: AbortSignal;
  /** Tells Temporal this step is alive; needed for steps with a heartbeat timeout. */
  heartbeat(details?: unknown): void;
}

/** One chat model the environment may call: a judge for rewards, configured like the teacher (`--judge.*`). */
export interface ModelClient {
  /** `n` completions of a conversation (default 1). A failing server is an infrastructure error: the step retries. */
  complete(messages: Message[], options?: ModelCallOptions): Promise<string[]>;
}

/** Sampling of one model call, and how a long call stays alive. */
export interface ModelCallOptions {
  /** @default 1 */
  n?: number;
  maxTokens?: number;
  /** @default 0 */
  temperature?: number;
  /** Aborts the call. Inside Clotho's steps the step's own cancellation is used when this is absent. */
  signal?: AbortSignal;
  /** Called while the server works; Clotho's steps heartbeat on it. */
  onProgress?: () => void;
}

/**
 * `T` when every part of it comes back from JSON as it went in (the trajectory's state slot is stored durably), else
 * `T` with each part that does not (a function, a Date, a Map or Set, a bigint) turned into the message
 * `'not JSON-safe'`, which the compiler then names in its error. `unknown` stays `unknown`.
 */
export type JsonSafe<T> = unknown extends T
  ? T
  : T extends string | number | boolean | null | undefined
    ? T
    : T extends bigint | symbol | Date | RegExp | Map<unknown, unknown> | Set<unknown> | ((...args: never[]) => unknown)
      ? 'not JSON-safe'
      : { [K in keyof T]: JsonSafe<T[K]> };

/** Where a trajectory stands when its final answer is parsed. */
export interface ParseContext<Item, Config = BaseEnvConfig, State = unknown> extends Liveness {
  item: Item;
  config: Config;
  /** The sample's index in its group (0 … group_size-1). */
  sample: number;
  /** The final assistant message's tool calls, parsed (OpenAI `tool_calls` or Hermes `<tool_call>` blocks). */
  toolCalls: ToolCallRequest[];
  /** Tool-call blocks whose JSON did not parse: a format failure of the model, never a crash. */
  malformedToolCalls: MalformedToolCall[];
  /** The whole trajectory, prompt included; frozen (shared with Clotho's group state): copy a message to change it. */
  messages: Message[];
  finishReason: string;
  /** The trajectory's state slot as the last step or tool left it (see `initialState` and `step`). */
  state: State;
  /** How the agent's episode went and what its check found, in a harness environment; absent in others. */
  harness?: HarnessOutcome;
}

/** What a reward function sees for one trajectory. */
export interface ScoreContext<Item, Parsed, Config = BaseEnvConfig, State = unknown> extends ParseContext<Item, Config, State> {
  parsed: Parsed;
  /** The final assistant message's text. */
  completion: string;
  /** The rewards `step` gave each turn (empty for single-turn environments). */
  turnRewards: number[];
  /** A judge model (`--judge.base_url` …); calling it without one configured fails with a message naming the flag. */
  judge: ModelClient;
  /** What `setup` returned for this group (null without setup). */
  group: unknown;
  /** The judge's answers to this group's `judge` requests, by request id (empty without a `judge` hook). */
  judgements: Record<string, string[]>;
}

/** One question for the judge model; a group's questions are asked in its own `judge` activity. */
export interface JudgeRequest {
  /** Names the answers in `judgements`; unique within the group. */
  id: string;
  messages: Message[];
  /** Answers wanted (votes). @default 1 */
  n?: number;
  maxTokens?: number;
  /** @default 0 */
  temperature?: number;
}

/** What an environment's `judge` hook sees: the whole group, parsed, before it is scored. */
export interface JudgeContext<Item, Parsed, Config = BaseEnvConfig> {
  item: Item;
  config: Config;
  /** The final assistant text of each trajectory. */
  completions: string[];
  parsed: Parsed[];
  /** Each trajectory's whole conversation; its messages are frozen (shared with Clotho's group state). */
  messages: Message[][];
  /** What `setup` returned for this group (null without setup). */
  group: unknown;
}

/** A score with named metrics beside it (metrics are averaged per group and shown in progress). */
export interface ScoreResult {
  score: number;
  metrics?: Record<string, number>;
}

/** What an environment answers after an assistant turn in a multi-turn episode. */
export interface StepResult<State = unknown> {
  /** Messages to append (tool results, the next user turn); may be empty when done. */
  messages: Message[];
  done: boolean;
  /** The trajectory's new state slot; unchanged when absent. JSON-safe: it is stored durably. */
  state?: State;
  /** This turn's reward, for per-turn credit (`turnRewards`, `advantages`). */
  reward?: number;
}

/** What `step` sees after an assistant turn. */
export interface StepContext<Item, Config = BaseEnvConfig, State = unknown> extends Liveness {
  item: Item;
  /**
   * The trajectory so far; its messages are frozen (shared with Clotho's group state, so an edit in place would reach
   * other copies): return new messages in `StepResult.messages` instead.
   */
  messages: Message[];
  /** 0-based index of the assistant turn just taken. */
  turn: number;
  /** The sample's index in its group. */
  sample: number;
  /** The trajectory's state slot as the last step or tool left it (`initialState` at first). */
  state: State;
  /** Results of the tools Clotho executed for this turn, already appended to `messages`. */
  toolResults: ToolResultMessage[];
  /** What `setup` returned for this group (null without setup). */
  group: unknown;
  config: Config;
}

/** A tool's answer as the model sees it. */
export interface ToolResultMessage extends Message {
  role: 'tool';
  tool_call_id: string;
  name: string;
  content: string;
}

/** Group setup: runs once before the first generation of a group (create a sandbox, open a game). */
export interface GroupContext<Item, Config = BaseEnvConfig> extends Liveness {
  item: Item;
  config: Config;
  itemIndex: number;
  groupSize: number;
  /** Unique per group and stable across retries: name external resources after it. */
  groupId: string;
}

/** What `rescoreGroup` sees: each trajectory's score, final text, generated tokens and finish reason. */
export interface RescoreContext<Config = BaseEnvConfig> {
  scores: number[];
  completions: string[];
  /** Tokens each trajectory generated over all its turns. */
  completionTokens: number[];
  finishReasons: string[];
  config: Config;
}

/** What `advantages` sees: the group's final scores and each trajectory's per-turn rewards. */
export interface AdvantageContext<Config = BaseEnvConfig> {
  scores: number[];
  turnRewards: number[][];
  config: Config;
}

/** Result of evaluating on held-out data: metric name → value. */
export type EvaluationMetrics = Record<string, number>;

/** What an environment's own {@link EnvironmentDefinition.evaluate} gets: the run's config and a way to ask the policy. */
export interface EvaluateContext<Config> {
  config: Config;
  /** Runs one completion for a prompt (n = 1, evaluation sampling). */
  complete(messages: Message[]): Promise<string>;
}

/** What an environment offers the model as tools: executable {@link Tool}s, or OpenAI-format definitions to render only. */
export type ToolOffer = Tool | Record<string, unknown>;

/**
 * An environment as its author writes it for {@link defineEnvironment}: a data source, a prompt, a parser and a
 * reward, optionally tools, a multi-turn step and an evaluation. Composed of small functions rather than a base class.
 * `State` is the type of each trajectory's state slot (what `initialState` returns; any state when unnamed).
 */
export interface EnvironmentSpec<Item, Parsed, Extra extends z.ZodRawShape, State = unknown> {
  name: string;
  description: string;
  /** The environment's own config fields (`--env.<field>`), beside Atropos's base fields. */
  config: Extra;
  /** Base-field defaults this environment prefers (Atropos's `config_init`). */
  defaults?: Partial<BaseEnvConfig>;
  /** Loads the data; called once per worker process. In-memory data: return {@link fromItems}`(rows)`. */
  load(config: EnvConfig<Extra>): Promise<ItemSource<Item>>;
  /** The conversation the model completes for an item (system, user and any earlier turns). */
  prompt(item: Item, config: EnvConfig<Extra>): Message[];
  /**
   * Tools offered to the model for this item, rendered by the chat template. Executable tools ({@link defineTool})
   * are run by Clotho, each call its own durable activity, and their results appended as `tool` messages; plain
   * OpenAI-format definitions are only offered (a single-turn tool-calling task scores the calls instead).
   */
  tools?(item: Item, config: EnvConfig<Extra>): MaybePromise<ToolOffer[]>;
  /** Strings that end a generation (an environment's turn markers, say). */
  stop?: string[];
  /**
   * Each trajectory's state slot before its first turn (a game's start); null when absent. Steps, tools, `parse` and
   * `score` read it as `state`, typed as this returns it. JSON-safe: it is stored with every turn.
   */
  initialState?(item: Item, sample: number, config: EnvConfig<Extra>): State;
  /** Runs once per group before generation; its JSON-safe result is passed to steps, tools and scores as `group`. */
  setup?(context: GroupContext<Item, EnvConfig<Extra>>): MaybePromise<unknown>;
  /** Runs once per group when it ends, scored or failed, with what `setup` returned. */
  teardown?(context: GroupContext<Item, EnvConfig<Extra>> & { group: unknown }): MaybePromise<void>;
  /** The model's answer from its final completion (what `score` reads as `parsed`); deterministic. */
  parse(completion: string, item: Item, context: ParseContext<Item, EnvConfig<Extra>, State>): MaybePromise<Parsed>;
  /**
   * Questions for the judge model (`--judge.*`) about the whole group, before it is scored (RLAIF: pairs of
   * completions, forward and reversed, several votes). They are asked in the group's `judge` activity, on the LLM
   * queue with its own retry policy (`--steps.judge.*`): a judge that keeps failing fails the group with its error,
   * never a reward. `score` reads the answers from `judgements`.
   */
  judge?(context: JudgeContext<Item, Parsed, EnvConfig<Extra>>): MaybePromise<JudgeRequest[]>;
  /**
   * The reward, from the parsed answer, the item, the state and any judgements; deterministic. One function of the
   * trajectory (a number, or a score with metrics), or a weighted list of reward functions that see the same context,
   * combined by {@link combineRewards}: built-ins by name with parameters (`'accuracy'`,
   * `{ name: 'length', weight: 0.5, params: { max_length: 300 } }`) and the environment's own
   * (`{ name: 'correct', weight: 2, reward: ({ item, parsed }) => … }`). The score is the weighted sum; each named
   * function's value is a metric. A function alone scores as the list of that one function, unnamed.
   */
  score: RewardFn<Item, Parsed, EnvConfig<Extra>, State> | readonly RewardEntry<Item, Parsed, EnvConfig<Extra>, State>[];
  /**
   * Answers an assistant turn: further messages (the next user turn, a game's observation), whether the episode is
   * done, the new state and the turn's reward. Without `step`, an episode with executable tools ends at the first
   * assistant turn that calls none.
   */
  step?(context: StepContext<Item, EnvConfig<Extra>, State>, config: EnvConfig<Extra>): MaybePromise<StepResult<State>>;
  /**
   * Rescores the whole group once each trajectory has its score (Atropos's length penalty when every answer is
   * right, say): the scores in, one score per trajectory out.
   */
  rescoreGroup?(context: RescoreContext<EnvConfig<Extra>>): number[];
  /**
   * Per-turn advantages of each trajectory (`[sample][turn]`); Clotho spreads them over each turn's tokens into the
   * group's `advantages` field. Absent or null: no `advantages` (the trainer computes its own from `scores`).
   */
  advantages?(context: AdvantageContext<EnvConfig<Extra>>): number[][] | null;
  /**
   * Atropos's `group_overrides` for an item's group, passed to the trainer and read by Clotho's own steps
   * (`teacher_top_k`, `skip_teacher_top_k`).
   */
  groupOverrides?(item: Item, config: EnvConfig<Extra>): Record<string, unknown>;
  /** `clotho evaluate`'s metrics, when the environment measures the policy its own way (else one greedy completion per item, scored). */
  evaluate?(context: EvaluateContext<EnvConfig<Extra>>): Promise<EvaluationMetrics>;
  /**
   * Runs each rollout through an agent program instead of Clotho's own turns (`src/env/harness.ts`): the agent's model
   * calls are the trajectory; `parse` and `score` read the agent's outcome and the check's result as `harness`.
   * `prompt` is then what `clotho inspect` shows as the task; `tools` and `step` are not used.
   */
  harness?: HarnessSpec<Item, EnvConfig<Extra>>;
}

/**
 * An environment as {@link defineEnvironment} gives it and Clotho runs it: its spec, with a reward list bound into
 * one `score` function.
 */
export interface EnvironmentDefinition<Item, Parsed, Extra extends z.ZodRawShape, State = unknown> extends EnvironmentSpec<
  Item,
  Parsed,
  Extra,
  State
> {
  /** A sample's reward (and optionally metrics); a list in the spec is their weighted combination. */
  score(context: ScoreContext<Item, Parsed, EnvConfig<Extra>, State>): MaybePromise<number | ScoreResult>;
}

/** The resolved config an environment sees: base fields plus its own. */
export type EnvConfig<Extra extends z.ZodRawShape> = BaseEnvConfig & z.infer<z.ZodObject<Extra>>;

// Environments differ in item, parse and config types; the registry holds them side by side.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- one type for environments of different type arguments (`unknown` would refuse their methods' parameters)
export type AnyEnvironment = EnvironmentDefinition<any, any, any, any>;

/**
 * Declares an environment: gives its parts their types, and binds a reward list into its `score` function here, so a
 * bad name or parameter throws as the module loads (`gsm8k.score[1]: unknown reward function …`). `State` is inferred
 * from `initialState` (`null` without one) and checked to be {@link JsonSafe}.
 */
export function defineEnvironment<Item, Parsed, Extra extends z.ZodRawShape, State = null>(
  spec: EnvironmentSpec<Item, Parsed, Extra, State> & {
    initialState?(item: Item, sample: number, config: EnvConfig<Extra>): JsonSafe<State>;
  },
): EnvironmentDefinition<Item, Parsed, Extra, State> {
  const { score } = spec;
  return { ...spec, score: typeof score === 'function' ? score : combineRewards(score, { field: `${spec.name}.score` }).score };
}

/** Whether an environment takes more than one assistant turn: it has a step, offers tools to run, or runs an agent. */
export function isMultiTurn(definition: AnyEnvironment): boolean {
  return Boolean(definition.step || definition.tools || definition.harness);
}
