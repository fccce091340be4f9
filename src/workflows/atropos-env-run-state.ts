import type { AtroposGroupResult, AtroposProgress } from '../schema/atropos.js';
import type { StoreRef } from '../schema/rollout.js';
import { initialProgress } from './env-run-state.js';

export function initialAtroposProgress(): AtroposProgress {
  return { ...initialProgress(), dropped: {}, cursor: 0, exhausted: false, backlog: [] };
}

/** A kept group to deliver: its store key and how many sequences it holds. */
export interface AtroposDelivery {
  ref: StoreRef;
  size: number;
}

/**
 * Records finished groups: the items they put back join the backlog, declines and Atropos's filtered groups are
 * counted by reason, scored ones add their mean; returns the groups to deliver, in order.
 */
export function recordAtroposResults(progress: AtroposProgress, results: AtroposGroupResult[]): AtroposDelivery[] {
  const deliveries: AtroposDelivery[] = [];
  for (const result of results) {
    progress.completed++;
    progress.backlog.push(...result.backlog);
    for (const [reason, n] of Object.entries(result.dropped)) countDrop(progress, reason, n);
    if (result.status === 'declined') {
      // A group Atropos's filter emptied is counted under the filter's reasons (above) alone.
      if (Object.keys(result.dropped).length === 0) countDrop(progress, result.reason ?? 'declined', 1);
      continue;
    }
    const scores = result.scores.flat();
    progress.scoreSum += scores.reduce((a, b) => a + b, 0) / Math.max(scores.length, 1);
    progress.scoredGroups++;
    result.groups.forEach((ref, i) => deliveries.push({ ref, size: result.scores[i]?.length ?? 0 }));
  }
  return deliveries;
}

function countDrop(progress: AtroposProgress, reason: string, n: number): void {
  progress.dropped[reason] = (progress.dropped[reason] ?? 0) + n;
}

/** Whether no item is left to start a group with: the iterator returned None and nothing was put back. */
export function outOfItems(progress: AtroposProgress): boolean {
  return progress.exhausted && progress.backlog.length === 0;
}
