import { ParentClosePolicy, executeChild, log } from '@temporalio/workflow';
import type { EnvRunInput, EvalProgress, EvalSchedule, EvaluationResult } from '../schema/rollout.js';
import { evaluation } from './evaluation.js';
import { causeOf, evaluationId } from './messages.js';
import { runVersion, versionTags } from './rollout-children.js';
import { ENVIRONMENT, RUN_ID } from './search-attributes.js';

/** Finished evaluations kept in the progress (the child workflows keep every one). */
const RESULTS_KEPT = 20;

export function initialEvalProgress(): EvalProgress {
  return { seenStep: null, running: null, started: 0, skipped: 0, failed: 0, results: [] };
}

/**
 * The trainer is at `step`: returns the step to evaluate at now, or null. One is due when the step crosses a multiple
 * of `everySteps` since the step last seen (Atropos's `env_step_checks`, which also misses a jump by a whole multiple,
 * 0 → 2 with 2; this does not). While one still runs a due evaluation is skipped and counted, as Atropos skips it.
 */
export function evaluationDue(progress: EvalProgress, step: number, everySteps: number): number | null {
  const seen = progress.seenStep;
  progress.seenStep = step;
  if (seen === null || everySteps <= 0 || Math.floor(step / everySteps) <= Math.floor(seen / everySteps)) return null;
  if (progress.running !== null) {
    progress.skipped++;
    return null;
  }
  progress.running = step;
  progress.started++;
  return step;
}

/**
 * Training groups that may run at once now (Atropos's `add_train_workers`): all of `maxInFlight` without an
 * evaluation running or with NONE; none with STOP_TRAIN; `eval_limit_ratio` of them, rounded down, with LIMIT_TRAIN.
 */
export function trainingLimit(
  schedule: Pick<EvalSchedule, 'handling' | 'limitRatio'> | undefined,
  progress: EvalProgress | undefined,
  maxInFlight: number,
): number {
  if (!schedule || progress?.running === null || progress?.running === undefined) return maxInFlight;
  if (schedule.handling === 'STOP_TRAIN') return 0;
  if (schedule.handling === 'LIMIT_TRAIN') return Math.floor(maxInFlight * schedule.limitRatio);
  return maxInFlight;
}

export function recordEvaluation(progress: EvalProgress, result: EvaluationResult): void {
  progress.running = null;
  progress.results.push(result);
  if (progress.results.length > RESULTS_KEPT) progress.results.splice(0, progress.results.length - RESULTS_KEPT);
}

/** An evaluation whose workflow failed (its inference gave up, say): counted, and training goes on. */
export function recordEvaluationFailure(progress: EvalProgress, step: number, message: string): void {
  progress.running = null;
  progress.failed++;
  progress.lastFailure = { step, message };
}

/**
 * Runs the evaluation child of `step` to its end and records how it went. Issues one command (the child's start) when
 * called, from the env-run's loop; its result only changes `progress`, so the loop's command order is the history's.
 */
export async function runEvaluation(input: EnvRunInput, schedule: EvalSchedule, progress: EvalProgress, step: number): Promise<void> {
  const workflowId = evaluationId(input.runId, input.environment, step);
  const { memo, version } = versionTags(runVersion());
  try {
    const result = await executeChild(evaluation, {
      workflowId,
      args: [{ ...schedule.run, step }],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      ...(memo ? { memo } : {}),
      // Listed with the run's rollout groups in the Temporal UI (`ClothoRunId = "<run>"`).
      typedSearchAttributes: input.group.searchAttributes
        ? [{ key: ENVIRONMENT, value: input.environment }, { key: RUN_ID, value: input.runId }, ...version]
        : undefined,
    });
    recordEvaluation(progress, result);
    log.info('evaluation finished', { step, metrics: result.metrics });
  } catch (error) {
    recordEvaluationFailure(progress, step, causeOf(error));
    log.warn('evaluation failed', { step, workflowId, error: causeOf(error) });
  }
}
