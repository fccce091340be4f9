import type { EvaluationMetrics, ModelClient } from './define.js';
import { runEpisode, type AssistantTurn } from './episode.js';
import type { LoadedEnvironment } from './loaded.js';
import type { Message } from '../schema/scored-data.js';

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

export interface EvaluateOptions {
  items: number;
  concurrency: number;
  /** Assistant turns per episode (1 for single-turn environments). */
  maxTurns: number;
  judge: ModelClient;
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
  let next = 0;
  const evaluateOne = async (itemIndex: number) => {
    const episode = await runEpisode(environment, turnOf, { itemIndex, maxTurns: options.maxTurns, judge: options.judge });
    samples.push({ itemIndex, messages: episode.messages, completion: episode.completion, score: episode.score, metrics: episode.metrics });
  };
  await Promise.all(
    Array.from({ length: Math.min(options.concurrency, count) }, async () => {
      while (next < count) await evaluateOne(next++);
    }),
  );
  samples.sort((a, b) => a.itemIndex - b.itemIndex);
  const metrics: EvaluationMetrics = { items: count, score: mean(samples.map((s) => s.score)) };
  for (const name of new Set(samples.flatMap((s) => Object.keys(s.metrics)))) {
    metrics[name] = mean(samples.flatMap((s) => (name in s.metrics ? [s.metrics[name]!] : [])));
  }
  return { metrics, samples };
}

const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);
