import type { z } from 'zod';
import type { BaseEnvConfig } from '../schema/config.js';
import type { Message } from '../schema/scored-data.js';

/** Items of an environment, addressed by index so that item i is the same on every worker and retry. */
export interface ItemSource<Item> {
  /** Number of distinct items; indices past it wrap around (epochs). */
  readonly size: number;
  get(index: number): Item;
}

/** What a reward function sees for one trajectory. */
export interface ScoreContext<Item, Parsed> {
  item: Item;
  parsed: Parsed;
  /** The final assistant message's text. */
  completion: string;
  /** The whole trajectory, prompt included. */
  messages: Message[];
  finishReason: string;
}

/** A score with named metrics beside it (metrics are averaged per group and shown in progress). */
export interface ScoreResult {
  score: number;
  metrics?: Record<string, number>;
}

/** What an environment answers after an assistant turn in a multi-turn episode. */
export interface StepResult {
  /** Messages to append (tool results, the next user turn); may be empty when done. */
  messages: Message[];
  done: boolean;
}

export interface StepContext<Item> {
  item: Item;
  messages: Message[];
  /** 0-based index of the assistant turn just taken. */
  turn: number;
}

/** Result of evaluating on held-out data: metric name → value. */
export type EvaluationMetrics = Record<string, number>;

export interface EvaluateContext<Config> {
  config: Config;
  /** Runs one completion for a prompt (n = 1, evaluation sampling). */
  complete(messages: Message[]): Promise<string>;
}

/**
 * An environment: a data source, a prompt, a parser and a reward, optionally a multi-turn step and
 * an evaluation. Composed of small functions rather than a base class.
 */
export interface EnvironmentDefinition<Item, Parsed, Extra extends z.ZodRawShape> {
  name: string;
  description: string;
  /** The environment's own config fields (`--env.<field>`), beside Atropos's base fields. */
  config: Extra;
  /** Base-field defaults this environment prefers (Atropos's `config_init`). */
  defaults?: Partial<BaseEnvConfig>;
  /** Loads the data; called once per worker process. */
  load(config: EnvConfig<Extra>): Promise<ItemSource<Item>>;
  prompt(item: Item, config: EnvConfig<Extra>): Message[];
  /** OpenAI-format tool definitions offered to the model for this item (rendered by the chat template). */
  tools?(item: Item, config: EnvConfig<Extra>): Record<string, unknown>[];
  /** Strings that end a generation (an environment's turn markers, say). */
  stop?: string[];
  parse(completion: string, item: Item): Parsed;
  score(context: ScoreContext<Item, Parsed>): number | ScoreResult;
  step?(context: StepContext<Item>, config: EnvConfig<Extra>): Promise<StepResult> | StepResult;
  /**
   * Atropos's `group_overrides` for an item's group, passed to the trainer and read by Clotho's own steps
   * (`teacher_top_k`, `skip_teacher_top_k`).
   */
  groupOverrides?(item: Item, config: EnvConfig<Extra>): Record<string, unknown>;
  evaluate?(context: EvaluateContext<EnvConfig<Extra>>): Promise<EvaluationMetrics>;
}

/** The resolved config an environment sees: base fields plus its own. */
export type EnvConfig<Extra extends z.ZodRawShape> = BaseEnvConfig & z.infer<z.ZodObject<Extra>>;

// Environments differ in item, parse and config types; the registry holds them side by side.
export type AnyEnvironment = EnvironmentDefinition<any, any, any>;

/** Declares an environment; the identity function that gives its parts their types. */
export function defineEnvironment<Item, Parsed, Extra extends z.ZodRawShape>(
  definition: EnvironmentDefinition<Item, Parsed, Extra>,
): EnvironmentDefinition<Item, Parsed, Extra> {
  return definition;
}

/** Normalises a reward function's answer. */
export function toScoreResult(value: number | ScoreResult): ScoreResult {
  return typeof value === 'number' ? { score: value } : value;
}
