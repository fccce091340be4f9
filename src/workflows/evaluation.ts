import { proxyActivities } from '@temporalio/workflow';
import type { EvaluationActivities } from '../activities/evaluation.js';
import type { EvaluationInput, EvaluationResult } from '../schema/rollout.js';
import { activityOptions } from './activity-options.js';

/**
 * One evaluation of the policy at a trainer step (Atropos's `evaluate()` every steps_per_eval steps), started by the
 * env-run as a child with a deterministic id per step. One activity on the run's LLM queue evaluates the items as
 * `clotho evaluate` does; it heartbeats the items done, so a retry after a crash goes on from there.
 */
export async function evaluation(input: EvaluationInput): Promise<EvaluationResult> {
  const { evaluateAtStep } = proxyActivities<EvaluationActivities>(activityOptions(input.activity, input.taskQueue));
  return evaluateAtStep(input);
}
