import type { RecordDrops } from '../schema/batcher.js';
import type { VerifiersGroupResult, VerifiersProgress } from '../schema/verifiers.js';
import type { Delivery } from './env-run-strategy.js';
import { initialProgress } from './env-run-state.js';

export function initialVerifiersProgress(): VerifiersProgress {
  return { ...initialProgress(), dropped: {}, cursor: 0, exhausted: false, pending: [] };
}

/**
 * Records finished groups: declined ones counted by verifiers' reason (`verifiers:<why>`, `timeout`), scored ones with
 * their mean score and metrics; returns the groups to deliver, in order, and the drops as the batcher counts them
 * (every verifiers reason is a `declined`).
 */
export function recordVerifiersResults(
  progress: VerifiersProgress,
  results: VerifiersGroupResult[],
): { deliveries: Delivery[]; dropped: RecordDrops['dropped'] } {
  const deliveries: Delivery[] = [];
  const dropped: Record<string, number> = {};
  for (const result of results) {
    progress.completed++;
    if (result.status === 'declined' || !result.group) {
      const reason = result.reason ?? 'declined';
      progress.dropped[reason] = (progress.dropped[reason] ?? 0) + 1;
      const counted = reason === 'timeout' ? 'timeout' : 'declined';
      dropped[counted] = (dropped[counted] ?? 0) + 1;
      continue;
    }
    progress.scoreSum += result.scores.reduce((a, b) => a + b, 0) / Math.max(result.scores.length, 1);
    progress.scoredGroups++;
    const sums = (progress.metricSums ??= {});
    for (const [name, value] of Object.entries(result.metrics)) sums[name] = (sums[name] ?? 0) + value;
    deliveries.push({
      ref: result.group,
      size: result.size,
      policyVersion: result.policyVersion,
      ...(result.longestSequence === undefined ? {} : { longestSequence: result.longestSequence }),
    });
  }
  return { deliveries, dropped };
}
