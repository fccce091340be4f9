import { percentCorrect, type EvaluationRun } from '../../env/evaluate.js';
import type { RunPlan } from '../run.js';
import type { WandbMetrics } from './local-run.js';
import { openWandbRun, wandbRunName } from './wandb-run.js';

/**
 * Atropos's evaluation metrics: `eval/percent_correct` (max(score, 0) averaged over the samples, as its math
 * environments compute it) and each of the evaluation's metrics as `eval/<name>`.
 */
export function evaluationMetrics(run: EvaluationRun): WandbMetrics {
  return evalMetrics(run.metrics, percentCorrect(run.samples));
}

/** Atropos's `eval/...` names for an evaluation's metrics (`clotho evaluate`'s, or one during `serve`). */
export function evalMetrics(metrics: Record<string, number>, correct: number | null): WandbMetrics {
  const out: WandbMetrics = {};
  if (correct !== null) out['eval/percent_correct'] = correct;
  for (const [name, value] of Object.entries(metrics)) if (typeof value === 'number') out[`eval/${name}`] = value;
  return out;
}

/** With `--env.use_wandb`, logs a `clotho evaluate` pass to a W&B run of its own, at step 0. */
export async function logEvaluation(plan: RunPlan, run: EvaluationRun, notice: (line: string) => void): Promise<void> {
  const env = plan.config.env;
  if (!env.use_wandb) return;
  const wandb = await openWandbRun(
    {
      name: wandbRunName(`${env.wandb_name ?? plan.definition.name}-eval`),
      project: process.env.WANDB_PROJECT || 'uncategorized',
      ...(process.env.WANDB_ENTITY ? { entity: process.env.WANDB_ENTITY } : {}),
      config: { ...env },
    },
    notice,
  );
  wandb.log(evaluationMetrics(run), 0);
  await wandb.finish(0);
}
