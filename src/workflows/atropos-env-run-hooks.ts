import { log, proxyActivities } from '@temporalio/workflow';
import type { AtroposActivities, AtroposEnvRunInput, AtroposProgress, AtroposRunHooks } from '../schema/atropos.js';
import type { BatcherRoom } from '../schema/rollout.js';
import { activityOptions } from './activity-options.js';
import { evaluationResult, keepCheckpoint, processLogDue, recordLogged, recordRestore, stepChecks } from './atropos-env-run-state.js';
import { evaluationDue, initialEvalProgress, recordEvaluation, recordEvaluationFailure, trainingLimit } from './env-run-eval.js';
import { causeOf } from './messages.js';

/** What an env-run does in place of Atropos's own loop besides collecting: checkpoints, `wandb_log`, `evaluate()`. */
export interface AtroposHooks {
  /** Training groups that may run at once now (Atropos's `add_train_workers` while an evaluation runs). */
  limit(maxInFlight: number): number;
  /** Whether an evaluation runs: the run waits for it before it ends or continues as new. */
  evaluating(): boolean;
  /** At each turn of the loop, under `serve`: Atropos's `env_step_checks` when the trainer's step changed. */
  atStep(room: BatcherRoom | undefined): Promise<void>;
  /** After groups finished, under `process`: a `wandb_log` every few groups, as its process_manager logs after each. */
  afterGroups(): Promise<void>;
  /** Before the run ends (the last log of `process`) or continues as new (a checkpoint, to restore from instead of 0). */
  atEnd(continuing: boolean): Promise<void>;
}

/**
 * The run's hooks (none for a run started without them); each awaits its activity on the Python worker from the env-run's one loop, so commands stay in an
 * order fixed by the history, except an evaluation: started from the loop, its result only changes `progress`.
 * Metrics live in the Python process that collected (Atropos's timing lists): with several workers, the one asked.
 */
export function atroposHooks(input: AtroposEnvRunInput, progress: AtroposProgress): AtroposHooks | undefined {
  const hooks = input.hooks;
  if (!hooks) return undefined;
  const { sink, taskQueues } = input;
  const { atroposCheckpoint, atroposMetrics } = proxyActivities<AtroposActivities>(activityOptions(input.steps.next, taskQueues.atropos));
  const schedule = sink.kind === 'batcher' ? hooks.evaluation : undefined;
  const evals = schedule ? (progress.evaluation ??= initialEvalProgress()) : undefined;

  // At the run's cursor: a new worker restores and fast-forwards first, so its checkpoint is not one of item 0.
  const checkpoint = async (step: number) => {
    const at = progress.cursor;
    const { cursor, data, restoredFrom, fastForwarded } = await atroposCheckpoint({
      step,
      cursor: at,
      checkpoint: progress.checkpoint ?? null,
    });
    recordRestore(progress, at, restoredFrom, fastForwarded);
    keepCheckpoint(progress, step, { cursor, data });
  };
  const logMetrics = async (step: number | null, count: number) => {
    const { metrics } = await atroposMetrics(step === null ? {} : { step });
    recordLogged(progress, step, metrics, count);
  };
  // Groups between two logs under `process`: Atropos's perf stats need two durations at least.
  const logEvery = Math.max(2, input.maxInFlight);
  return {
    limit: (maxInFlight) => trainingLimit(schedule, evals, maxInFlight),
    evaluating: () => (evals?.running ?? null) !== null,
    async atStep(room) {
      if (!room || sink.kind !== 'batcher') return;
      const evalStep = evals && schedule ? evaluationDue(evals, room.currentStep, schedule.everySteps) : null;
      if (evalStep !== null) void evaluate(input, hooks, evals!, evalStep);
      const due = stepChecks(progress, room.currentStep, hooks);
      if (due.checkpoint !== null) await checkpoint(due.checkpoint);
      if (due.log) await logMetrics(room.currentStep, progress.delivered);
    },
    async afterGroups() {
      if (sink.kind === 'jsonl' && processLogDue(progress, logEvery, false)) await logMetrics(null, progress.completed);
    },
    async atEnd(continuing) {
      if (continuing && hooks.usesCheckpoint) await checkpoint(progress.hooks?.seenStep ?? 0);
      if (!continuing && sink.kind === 'jsonl' && processLogDue(progress, logEvery, true)) await logMetrics(null, progress.completed);
    },
  };
}

/** One `evaluate()` at `step` on the Python worker, recorded as Clotho's evaluations are; a failure is counted, training goes on. */
async function evaluate(
  input: AtroposEnvRunInput,
  hooks: AtroposRunHooks,
  evals: NonNullable<AtroposProgress['evaluation']>,
  step: number,
) {
  const { atroposEvaluate } = proxyActivities<AtroposActivities>({
    ...activityOptions(hooks.evaluation!.step, input.taskQueues.atropos),
    summary: `evaluate at step ${step}`,
  });
  try {
    const result = evaluationResult(step, await atroposEvaluate({ step }));
    recordEvaluation(evals, result);
    log.info('evaluation finished', { step, metrics: result.metrics });
  } catch (error) {
    recordEvaluationFailure(evals, step, causeOf(error));
    log.warn('evaluation failed', { step, error: causeOf(error) });
  }
}
