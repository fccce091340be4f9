import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EvaluationMetrics } from './define.js';
import type { EvaluationSample } from './evaluate.js';

/** Writes an evaluation as Atropos's `data_dir_to_save_evals` holds it: `metrics.json` and `samples.jsonl`. */
export async function writeEvaluation(dir: string, metrics: EvaluationMetrics, samples: EvaluationSample[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'metrics.json'), `${JSON.stringify(metrics, null, 2)}\n`);
  await writeFile(join(dir, 'samples.jsonl'), samples.map((s) => `${JSON.stringify(s)}\n`).join(''));
}

/**
 * The files of an evaluation that may be retried part-way (during `serve`): each item's sample is kept in a file of
 * its own as it is scored, so an attempt that resumes from the heartbeat still writes every item's sample at the end.
 */
export function resumableEvaluationFiles(dir: string) {
  const pending = join(dir, 'items');
  return {
    async item(sample: EvaluationSample): Promise<void> {
      await mkdir(pending, { recursive: true });
      await writeFile(join(pending, `${sample.itemIndex}.json`), JSON.stringify(sample));
    },
    async finish(metrics: EvaluationMetrics): Promise<void> {
      const names = await readdir(pending).catch(() => [] as string[]);
      const samples = await Promise.all(
        names.map(async (name) => JSON.parse(await readFile(join(pending, name), 'utf8')) as EvaluationSample),
      );
      samples.sort((a, b) => a.itemIndex - b.itemIndex);
      await writeEvaluation(dir, metrics, samples);
      await rm(pending, { recursive: true, force: true });
    },
  };
}
