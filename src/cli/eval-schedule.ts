import { resolve } from 'node:path';
import { isMultiTurn } from '../env/define.js';
import { BaseEnvConfigSchema } from '../config/schemas.js';
import type { EvalSchedule } from '../schema/rollout.js';
import type { RunPlan } from './run.js';
import { runTaskQueues } from './runtime.js';

/** An evaluation may take long; a worker that died is noticed by its heartbeat, not by this. */
export const EVALUATION_TIMEOUT_MS = 24 * 3600_000;
/** Environment code between two items (a slow tool, a judge) may keep the heartbeat quiet this long. */
const EVALUATION_HEARTBEAT_MS = 120_000;

/**
 * `clotho serve`'s evaluation during training, from Atropos's fields: every `steps_per_eval` trainer steps (none when
 * ≤ 0), with `eval_handling` and `eval_limit_ratio`; each evaluation is `clotho evaluate`'s pass over `eval_items`
 * items with `max_eval_workers` at once, retried as the generate step is.
 */
export function evalSchedule(plan: RunPlan): EvalSchedule | undefined {
  const { env, steps } = plan.config;
  if (env.steps_per_eval <= 0) return undefined;
  return {
    everySteps: env.steps_per_eval,
    handling: env.eval_handling,
    limitRatio: env.eval_limit_ratio,
    run: {
      runId: plan.runId,
      environment: plan.definition.name,
      items: env.eval_items,
      maxTurns: isMultiTurn(plan.definition) ? env.max_turns : 1,
      concurrency: env.max_eval_workers,
      taskQueue: runTaskQueues(plan.runId, plan.definition.name).llm,
      ...(env.data_dir_to_save_evals ? { saveDir: resolve(env.data_dir_to_save_evals) } : {}),
      activity: {
        ...steps.generate,
        local: false,
        startToCloseTimeoutMs: EVALUATION_TIMEOUT_MS,
        heartbeatTimeoutMs: Math.max(steps.generate.heartbeatTimeoutMs ?? 0, EVALUATION_HEARTBEAT_MS),
      },
    },
  };
}

/** Atropos's process mode has no trainer steps and never evaluates; a setting that asks for it is said to do nothing. */
export function processEvalNotices(plan: RunPlan): string[] {
  const { env } = plan.config;
  const defaults = { ...BaseEnvConfigSchema.parse({}), ...plan.definition.defaults };
  const set = (['steps_per_eval', 'eval_handling', 'eval_limit_ratio', 'eval_items'] as const).filter(
    (field) => env[field] !== defaults[field],
  );
  return set.length === 0
    ? []
    : [
        `${set.map((f) => `--env.${f}`).join(', ')}: no effect in \`clotho process\` (no trainer steps; Atropos's process mode does not evaluate either); \`clotho serve\` evaluates during training, \`clotho evaluate\` on its own`,
      ];
}
