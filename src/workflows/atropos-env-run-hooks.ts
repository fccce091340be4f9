import { log, proxyActivities } from '@temporalio/workflow';
import type { AtroposActivities, AtroposEnvRunInput, AtroposProgress, AtroposStoreTarget } from '../schema/atropos.js';
import { storeKey } from '../schema/store-keys.js';
import type { BatcherRoom, EvalProgress } from '../schema/rollout.js';
import { activityOptions } from './activity-options.js';
import { evaluationResult, keepCheckpoint, processLogDue, recordLogged, recordRestore, stepChecks } from './atropos-env-run-state.js';
import { recordEvaluation, recordEvaluationFailure } from './env-run-eval.js';
import type { EnvRunStrategy } from './env-run-strategy.js';
import { causeOf } from './messages.js';

/** What an env-run does in place of Atropos's own loop besides collecting and evaluating: checkpoints, `wandb_log`. */
export type AtroposHooks = Required<Pick<EnvRunStrategy<unknown, unknown>, 'atStep' | 'afterDelivery' | 'atEnd'>>;

/**
 * The run's hooks (none for a run started without them); each awaits its activity on the Python worker from the
 * env-run's one loop, so commands stay in an order fixed by the history. Metrics live in the Python process that
 * collected (Atropos's timing lists): with several workers, the one asked.
 */
export function atroposHooks(input: AtroposEnvRunInput, progress: AtroposProgress): AtroposHooks | undefined {
  const hooks = input.hooks;
  if (!hooks) return undefined;
  const { sink, taskQueues } = input;
  const { atroposCheckpoint, atroposMetrics } = proxyActivities<AtroposActivities>(activityOptions(input.steps.next, taskQueues.atropos));

  // At the run's cursor: a new worker restores and fast-forwards first, so its checkpoint is not one of item 0.
  const checkpoint = async (step: number) => {
    const at = progress.cursor;
    const { cursor, data, ref, restoredFrom, fastForwarded } = await atroposCheckpoint({
      step,
      cursor: at,
      checkpoint: progress.checkpoint ?? null,
      store: atroposStore(input),
    });
    recordRestore(progress, at, restoredFrom, fastForwarded);
    keepCheckpoint(progress, step, { cursor, data, ...(ref ? { ref } : {}) });
  };
  const logMetrics = async (step: number | null, count: number) => {
    const { metrics } = await atroposMetrics(step === null ? {} : { step });
    recordLogged(progress, step, metrics, count);
  };
  // Groups between two logs under `process`: Atropos's perf stats need two durations at least.
  const logEvery = Math.max(2, input.maxInFlight);
  return {
    /** Under `serve`: Atropos's `env_step_checks` when the trainer's step changed. */
    async atStep(room: BatcherRoom | undefined) {
      if (!room || sink.kind !== 'batcher') return;
      const due = stepChecks(progress, room.currentStep, hooks);
      if (due.checkpoint !== null) await checkpoint(due.checkpoint);
      if (due.log) await logMetrics(room.currentStep, progress.delivered);
    },
    /** Under `process`: a `wandb_log` every few groups, as its process_manager logs after each. */
    async afterDelivery() {
      if (sink.kind === 'jsonl' && processLogDue(progress, logEvery, false)) await logMetrics(null, progress.completed);
    },
    /** The last log of `process`, or a checkpoint before continue-as-new, to restore from instead of 0. */
    async atEnd(continuing: boolean) {
      if (continuing && hooks.usesCheckpoint) await checkpoint(progress.hooks?.seenStep ?? 0);
      if (!continuing && sink.kind === 'jsonl' && processLogDue(progress, logEvery, true)) await logMetrics(null, progress.completed);
    },
  };
}

/**
 * Atropos's evaluation during training, for the loop: `evaluate()` on the Python worker every steps_per_eval steps,
 * recorded as Clotho's evaluations are; a failure is counted, training goes on.
 */
export function atroposEvaluation(input: AtroposEnvRunInput): EnvRunStrategy<unknown, unknown>['evaluation'] {
  const schedule = input.hooks?.evaluation;
  if (!schedule) return undefined;
  return {
    schedule,
    async start(evals: EvalProgress, step: number) {
      const { atroposEvaluate } = proxyActivities<AtroposActivities>({
        ...activityOptions(schedule.step, input.taskQueues.atropos),
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
    },
  };
}

/** The run's store as the Python worker writes to it: items and checkpoints under `<run>/<env>`. */
export function atroposStore(input: Pick<AtroposEnvRunInput, 'storeRoot' | 'runId' | 'environment'>): AtroposStoreTarget {
  return { root: input.storeRoot, run: storeKey(input.runId, input.environment) };
}
