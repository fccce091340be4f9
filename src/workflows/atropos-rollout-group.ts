import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { AtroposActivities, AtroposGroupInput, AtroposGroupResult } from '../schema/atropos.js';
import { itemKey, storeKey } from '../schema/store-keys.js';
import { activityOptions } from './activity-options.js';
import { MEAN_SCORE, STATUS } from './search-attributes.js';

/**
 * One group of an Atropos environment: a single `atroposCollect` on the Python worker's queue, which runs the
 * environment's `collect_trajectories`, `postprocess_histories` and Atropos's send filter, writes the kept groups into
 * the trajectory store under its attempt's own keys and answers with their references, which are what is delivered. It heartbeats, so a dead worker is noticed within the
 * heartbeat timeout and the collect runs again elsewhere (work inside one collect is redone; the group is not lost).
 * An exception fails the activity with its Python traceback; once the step's retries run out the workflow fails
 * with it, never dropped or scored. History: started, one workflow task, the activity, one task, completed.
 */
export async function atroposRolloutGroup(input: AtroposGroupInput): Promise<AtroposGroupResult> {
  // Never local: the collect runs in the Python worker, on its queue.
  const { atroposCollect } = proxyActivities<AtroposActivities>({
    ...activityOptions(input.collect, input.taskQueue),
    summary: `item ${input.itemIndex}`,
  });
  // The key rollout groups of Clotho's own environments use for their items; each attempt writes under its own.
  const store = {
    root: input.storeRoot,
    run: storeKey(input.runId, input.environment),
    key: itemKey(input.runId, input.environment, input.itemIndex),
  };
  let collected;
  try {
    const { itemIndex, item, maxTokenLen } = input;
    collected = await atroposCollect({ itemIndex, item, store, ...(maxTokenLen === undefined ? {} : { maxTokenLen }) });
  } catch (error) {
    setStatus(input, 'failed');
    throw error;
  }
  const dropped: Record<string, number> = {};
  for (const { reason } of collected.dropped) dropped[reason] = (dropped[reason] ?? 0) + 1;
  const base = { itemIndex: input.itemIndex, dropped, backlog: collected.backlog, policyVersion: input.policyVersion };
  if (collected.status === 'declined') {
    setStatus(input, 'dropped');
    return { ...base, status: 'declined', reason: collected.reason, groups: [], scores: [] };
  }
  const all = collected.scores.flat();
  setStatus(input, 'scored', all.reduce((a, b) => a + b, 0) / Math.max(all.length, 1));
  return { ...base, status: 'scored', groups: collected.groupRefs, scores: collected.scores };
}

function setStatus(input: AtroposGroupInput, status: string, meanScore?: number): void {
  if (!input.searchAttributes) return;
  upsertSearchAttributes([{ key: STATUS, value: status }, ...(meanScore === undefined ? [] : [{ key: MEAN_SCORE, value: meanScore }])]);
}
