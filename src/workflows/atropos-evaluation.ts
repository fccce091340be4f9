import { proxyActivities } from '@temporalio/workflow';
import type { AtroposActivities, AtroposEvaluated, AtroposEvaluationInput } from '../schema/atropos.js';
import { activityOptions } from './activity-options.js';

/**
 * One evaluation of an Atropos environment (`clotho evaluate --atropos`, Atropos's `evaluate` subcommand): a single
 * heartbeating `atroposEvaluate` on the Python worker's queue, which runs the environment's `evaluate()` (and so its
 * `evaluate_log`, writing metrics.json and samples.jsonl) under the step's retry policy. A raise fails the activity
 * with its Python traceback; once the attempts run out the workflow fails with it. Clotho's own `evaluation` does not
 * fit: its activity evaluates Clotho environments' items on the LLM queue. History: started, one workflow task, the
 * activity, one task, completed.
 */
export async function atroposEvaluation(input: AtroposEvaluationInput): Promise<AtroposEvaluated> {
  const { atroposEvaluate } = proxyActivities<AtroposActivities>({
    ...activityOptions(input.evaluate, input.taskQueue),
    summary: `evaluate ${input.environment}`,
  });
  return atroposEvaluate({});
}
