import type { BatcherRoom, DropReason, EnvRunProgress, GroupSink, ItemWait, RolloutGroupResult } from '../schema/rollout.js';

/** Failures kept in the progress (the rest are counted); the Temporal UI has every one. */
const FAILURES_KEPT = 20;

export function initialProgress(): EnvRunProgress {
  return { nextItem: 0, completed: 0, delivered: 0, failed: 0, dropped: {}, failures: [], scoreSum: 0, scoredGroups: 0 };
}

/** Records a finished group; returns whether it is to be delivered. */
export function recordResult(progress: EnvRunProgress, result: RolloutGroupResult): boolean {
  progress.completed++;
  if (result.dropReason === 'timeout') {
    // Given up at its deadline: never scored, so it counts in no score or metric.
    progress.dropped.timeout = (progress.dropped.timeout ?? 0) + 1;
    return false;
  }
  progress.scoreSum += result.meanScore;
  progress.scoredGroups++;
  if (result.metrics) {
    const sums = (progress.metricSums ??= {});
    for (const [name, value] of Object.entries(result.metrics)) sums[name] = (sums[name] ?? 0) + value;
  }
  if (result.status === 'dropped') {
    const reason = result.dropReason ?? 'scores_all_equal';
    progress.dropped[reason] = (progress.dropped[reason] ?? 0) + 1;
    return false;
  }
  return true;
}

/** Records finished groups: those to deliver, and the dropped ones counted by reason (for the batcher's metrics). */
export function recordFinished(progress: EnvRunProgress, finished: RolloutGroupResult[]) {
  const kept: RolloutGroupResult[] = [];
  const dropped: Partial<Record<DropReason, number>> = {};
  for (const result of finished) {
    if (recordResult(progress, result) && result.group) kept.push(result);
    else if (result.dropReason) dropped[result.dropReason] = (dropped[result.dropReason] ?? 0) + 1;
  }
  return { kept, dropped };
}

/** Records a group whose workflow failed (inference or environment gave up); it is never a reward. */
export function recordFailure(progress: EnvRunProgress, itemIndex: number, message: string): void {
  progress.completed++;
  progress.failed++;
  if (progress.failures.length < FAILURES_KEPT) progress.failures.push({ itemIndex, message });
}

/**
 * Groups an env may start now without more than `maxBatchesOffpolicy` batches of its groups waiting in the
 * batcher (Atropos's backpressure): the limit less what the batcher queues, what was delivered but not yet
 * received there (signals on their way), and what is running or finished but not yet delivered (`pending`).
 *
 * An env that shares the batcher (its room carries a `share`) gets its share of that limit, as an
 * Atropos env gets its `env_weight` share of the inference server; batches then mix the envs by weight. A share is
 * rounded up, so that together the envs can always fill a batch and none starves.
 */
export function roomForGroups(
  room: BatcherRoom,
  delivered: number,
  pending: number,
  maxBatchesOffpolicy: number,
  groupSize: number,
): number {
  const whole = (maxBatchesOffpolicy * Math.max(room.batchSize, groupSize)) / groupSize;
  const share = room.share ?? 1;
  // Less a hair before rounding up: a product that floating point puts just above a whole number stays that number.
  const limit = share < 1 ? Math.ceil(whole * share - 1e-9) : Math.floor(whole);
  const inTransit = Math.max(0, delivered - room.receivedGroups);
  return Math.max(0, limit - room.queuedGroups - inTransit - pending);
}

/** Whether a run feeding a batcher has reached the trainer's last step (`stopAtStep`): it launches no more groups. */
export function pastLastStep(sink: GroupSink, room: BatcherRoom | undefined): boolean {
  return sink.kind === 'batcher' && room !== undefined && room.currentStep >= sink.stopAtStep;
}

/**
 * How many groups a run may launch now: its free slots and, feeding a batcher, no more than the room
 * `max_batches_offpolicy` leaves ({@link roomForGroups}); none before the batcher's first push of its room.
 */
export function groupsToLaunch(
  slots: number,
  sink: GroupSink,
  room: BatcherRoom | undefined,
  delivered: number,
  pending: number,
  groupSize: number,
): number {
  if (sink.kind !== 'batcher') return slots;
  if (!room) return 0;
  return Math.min(slots, roomForGroups(room, delivered, pending, sink.maxBatchesOffpolicy, groupSize));
}

/** The next wait for items (`ItemWait`): the first, or twice the last, at most the maximum. */
export function nextItemWait(policy: ItemWait, lastMs: number | null): number {
  return lastMs === null ? policy.initialMs : Math.min(policy.maximumMs, lastMs * 2);
}
