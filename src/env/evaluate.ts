import { toScoreResult, type EvaluationMetrics } from './define.js';
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

/**
 * Evaluates an environment: its own `evaluate` when it has one, else one completion per item (items 0 … n-1,
 * at most `concurrency` at once) parsed and scored by the environment, with every metric averaged.
 */
export async function evaluateEnvironment(
  environment: LoadedEnvironment,
  complete: (messages: Message[]) => Promise<string>,
  options: { items: number; concurrency: number },
): Promise<EvaluationRun> {
  const { definition, config, items } = environment;
  if (definition.evaluate) return { metrics: await definition.evaluate({ config, complete }), samples: [] };
  const count = Math.min(options.items, items.size);
  const samples: EvaluationSample[] = [];
  let next = 0;
  const evaluateOne = async (itemIndex: number) => {
    const item = items.get(itemIndex);
    const messages = definition.prompt(item, config);
    const completion = await complete(messages);
    const parsed = definition.parse(completion, item);
    const all = [...messages, { role: 'assistant', content: completion }];
    const result = toScoreResult(await definition.score({ item, parsed, completion, messages: all, finishReason: 'stop' }));
    samples.push({ itemIndex, messages: all, completion, score: result.score, metrics: result.metrics ?? {} });
  };
  await Promise.all(
    Array.from({ length: Math.min(options.concurrency, count) }, async () => {
      while (next < count) await evaluateOne(next++);
    }),
  );
  samples.sort((a, b) => a.itemIndex - b.itemIndex);
  const metrics: EvaluationMetrics = { items: count, score: mean(samples.map((s) => s.score)) };
  for (const name of new Set(samples.flatMap((s) => Object.keys(s.metrics)))) {
    metrics[name] = mean(samples.map((s) => s.metrics[name] ?? 0));
  }
  return { metrics, samples };
}

const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);
