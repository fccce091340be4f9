import type { GenerateOptions, GenerateRequest, Completion } from '../inference/types.js';
import type { BaseEnvConfig } from '../config/schemas.js';
import type { EvaluationMetrics, ModelClient } from './define.js';
import { runEpisode, type AssistantTurn } from './episode.js';
import type { LoadedEnvironment } from './loaded.js';
import type { Message } from '../schema/scored-data.js';
import { reasoningOf } from './thinking.js';

/** One evaluated item, as Atropos's `samples.jsonl` keeps it. */
export interface EvaluationSample {
  itemIndex: number;
  messages: Message[];
  completion: string;
  score: number;
  metrics: Record<string, number>;
}

export interface EvaluationRun {
  metrics: EvaluationMetrics;
  samples: EvaluationSample[];
}

/** What an evaluated item contributes to the metrics; a resumed evaluation is given these for the items done. */
export type ScoredItem = Pick<EvaluationSample, 'itemIndex' | 'score' | 'metrics'>;

export interface EvaluateOptions {
  items: number;
  concurrency: number;
  /** Assistant turns per episode (1 for single-turn environments). */
  maxTurns: number;
  judge: ModelClient;
  /** Items evaluated before (an evaluation resumed after a crash): counted, not run again. */
  done?: ScoredItem[];
  /**
   * Plays an item's episode its own way instead of Clotho's turns (a harness environment's agent program): its
   * conversation, final completion, score and metrics.
   */
  episode?(itemIndex: number): Promise<Pick<EvaluationSample, 'messages' | 'completion' | 'score' | 'metrics'>>;
  /** Called after each item, with every item scored so far and the item's sample; awaited before the next item. */
  onItem?(scored: ScoredItem[], sample: EvaluationSample): void | Promise<void>;
}

/** The inference an evaluation calls: a server manager takes the eval slot pool (`split`), a plain client ignores it. */
export interface EvaluationInference {
  generate(request: GenerateRequest, options?: GenerateOptions & { split?: 'train' | 'eval' }): Promise<Completion[]>;
}

/**
 * An assistant turn as evaluation samples it, in `clotho evaluate` and during `serve`: one greedy completion
 * (temperature 0) of at most max_token_length tokens, with the run's reasoning request, on the eval slots.
 */
export function evaluationTurn(policy: EvaluationInference, config: BaseEnvConfig, call: GenerateOptions = {}): AssistantTurn {
  const reasoning = reasoningOf(config);
  return async (messages, tools) => {
    // An evaluation keeps the messages and throws tokens away: any OpenAI-compatible server will do.
    const request = {
      messages,
      n: 1,
      maxTokens: config.max_token_length,
      temperature: 0,
      topP: 1,
      messagesOnly: true,
      ...(tools ? { tools } : {}),
      ...(reasoning ? { reasoning } : {}),
    };
    const [completion] = await policy.generate(request, { ...call, split: 'eval' });
    return completion!.message;
  };
}

/**
 * Evaluates an environment: its own `evaluate` when it has one, else one episode per item (items 0 … n-1, at most
 * `concurrency` at once; tools executed, multi-turn steps taken) parsed and scored by the environment. Each metric is
 * averaged over the items that report it, so per-category metrics (`accuracy_simple`) are that category's.
 */
export async function evaluateEnvironment(
  environment: LoadedEnvironment,
  turnOf: AssistantTurn,
  options: EvaluateOptions,
): Promise<EvaluationRun> {
  const { definition, config, items } = environment;
  if (definition.evaluate) {
    const complete = async (messages: Message[]) => String((await turnOf(messages, undefined)).content ?? '');
    return { metrics: await definition.evaluate({ config, complete }), samples: [] };
  }
  const count = Math.min(options.items, items.size);
  const samples: EvaluationSample[] = [];
  const scored: ScoredItem[] = [...(options.done ?? [])];
  const skip = new Set(scored.map((s) => s.itemIndex));
  const todo = Array.from({ length: count }, (_, i) => i).filter((i) => !skip.has(i));
  let next = 0;
  const evaluateOne = async (itemIndex: number) => {
    const episode = options.episode
      ? await options.episode(itemIndex)
      : await runEpisode(environment, turnOf, { itemIndex, maxTurns: options.maxTurns, judge: options.judge });
    const sample = {
      itemIndex,
      messages: episode.messages,
      completion: episode.completion,
      score: episode.score,
      metrics: episode.metrics,
    };
    samples.push(sample);
    scored.push({ itemIndex, score: episode.score, metrics: episode.metrics });
    await options.onItem?.(scored, sample);
  };
  await Promise.all(
    Array.from({ length: Math.min(options.concurrency, todo.length) }, async () => {
      while (next < todo.length) await evaluateOne(todo[next++]!);
    }),
  );
  samples.sort((a, b) => a.itemIndex - b.itemIndex);
  return { metrics: evaluationSummary(scored, count), samples };
}

/** Each metric averaged over the items that report it, beside `items` and the mean `score`. */
export function evaluationSummary(items: ScoredItem[], count: number): EvaluationMetrics {
  const scored = [...items].sort((a, b) => a.itemIndex - b.itemIndex);
  const metrics: EvaluationMetrics = { items: count, score: mean(scored.map((s) => s.score)) };
  for (const name of new Set(scored.flatMap((s) => Object.keys(s.metrics)))) {
    metrics[name] = mean(scored.flatMap((s) => (name in s.metrics ? [s.metrics[name]!] : [])));
  }
  return metrics;
}

/** Atropos's `eval/percent_correct`: max(score, 0) averaged over the items, as its math environments compute it. */
export function percentCorrect(scored: Pick<ScoredItem, 'score'>[]): number | null {
  return scored.length === 0 ? null : mean(scored.map((s) => Math.max(s.score, 0)));
}

const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);
