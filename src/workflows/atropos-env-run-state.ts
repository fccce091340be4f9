import type { AtroposCheckpoint, AtroposEvaluated, AtroposGroupResult, AtroposProgress, AtroposRunHooks } from '../schema/atropos.js';
import type { RecordDrops } from '../schema/batcher.js';
import type { EvaluationResult } from '../schema/rollout.js';
import type { Delivery } from './env-run-strategy.js';
import { initialProgress } from './env-run-state.js';

export function initialAtroposProgress(): AtroposProgress {
  return { ...initialProgress(), dropped: {}, cursor: 0, exhausted: false, backlog: [] };
}

/**
 * Records finished groups: the items they put back join the backlog, declines and Atropos's filtered groups are
 * counted by reason, scored ones add their mean; returns the groups to deliver, in order.
 */
export function recordAtroposResults(progress: AtroposProgress, results: AtroposGroupResult[]): Delivery[] {
  const deliveries: Delivery[] = [];
  for (const result of results) {
    progress.completed++;
    progress.backlog.push(...result.backlog);
    for (const [reason, n] of Object.entries(droppedBy(result))) countDrop(progress.dropped, reason, n);
    if (result.status === 'declined') continue;
    const scores = result.scores.flat();
    progress.scoreSum += scores.reduce((a, b) => a + b, 0) / Math.max(scores.length, 1);
    progress.scoredGroups++;
    const { policyVersion } = result;
    result.groups.forEach((ref, i) => deliveries.push({ ref, size: result.scores[i]?.length ?? 0, policyVersion }));
  }
  return deliveries;
}

/** A finished group's drops by Atropos's reason: its filter's, else `declined` when it delivers nothing. */
function droppedBy(result: AtroposGroupResult): Record<string, number> {
  // A group Atropos's filter emptied is counted under the filter's reasons alone.
  if (result.status === 'declined' && Object.keys(result.dropped).length === 0) return { [result.reason ?? 'declined']: 1 };
  return result.dropped;
}

function countDrop(dropped: Record<string, number>, reason: string, n: number): void {
  dropped[reason] = (dropped[reason] ?? 0) + n;
}

/**
 * The drops of finished groups as the batcher counts them (its `recordDrops`): Atropos's reasons that are Clotho's
 * under Clotho's name (`identical scores`, `longer than max_token_len …`, `timeout`), `declined`, the rest `filtered`.
 */
export function batcherDrops(results: AtroposGroupResult[]): RecordDrops['dropped'] {
  const dropped: Record<string, number> = {};
  for (const result of results) for (const [reason, n] of Object.entries(droppedBy(result))) countDrop(dropped, batcherReason(reason), n);
  return dropped;
}

function batcherReason(reason: string): keyof RecordDrops['dropped'] {
  if (reason === 'identical scores') return 'scores_all_equal';
  if (reason.startsWith('longer than max_token_len')) return 'too_long';
  if (reason === 'timeout' || reason === 'declined') return reason;
  return 'filtered';
}

/** Whether no item is left to start a group with: the iterator returned None and nothing was put back. */
export function outOfItems(progress: AtroposProgress): boolean {
  return progress.exhausted && progress.backlog.length === 0;
}

/** What Atropos's `env_step_checks` does when the trainer's step changes: a checkpoint at a step, a `wandb_log`. */
export interface StepChecks {
  checkpoint: number | null;
  log: boolean;
}

/**
 * The trainer is at `step`: a checkpoint is due when it crosses a multiple of `checkpointInterval` since the step last
 * seen (at that multiple, as Atropos names it), and a log when it changed and at least `minGroups` groups were
 * delivered since the last one (Atropos's min_items_sent_before_logging). Nothing at the first step seen.
 */
export function stepChecks(progress: AtroposProgress, step: number, hooks: AtroposRunHooks): StepChecks {
  const state = (progress.hooks ??= { seenStep: null, loggedAt: 0 });
  const seen = state.seenStep;
  state.seenStep = step;
  if (seen === null || seen === step) return { checkpoint: null, log: false };
  const every = hooks.checkpointInterval ?? 0;
  const crossed = hooks.usesCheckpoint && every > 0 && Math.floor(step / every) > Math.floor(seen / every);
  return {
    checkpoint: crossed ? Math.floor(step / every) * every : null,
    log: progress.delivered - state.loggedAt >= Math.max(1, hooks.minGroupsToLog),
  };
}

/** Under `process`, Atropos logs after every group; one log per `every` groups finished (and one at the end) here. */
export function processLogDue(progress: AtroposProgress, every: number, atEnd: boolean): boolean {
  const since = progress.completed - (progress.hooks?.loggedAt ?? 0);
  return atEnd ? since > 0 : since >= every;
}

/** Records what `wandb_log` logged: each metric's newest value (a window without one keeps the last). */
export function recordLogged(progress: AtroposProgress, step: number | null, metrics: Record<string, number>, count: number): void {
  progress.logged = { step, metrics: { ...progress.logged?.metrics, ...metrics } };
  (progress.hooks ??= { seenStep: null, loggedAt: 0 }).loggedAt = count;
}

/** Records how a worker brought its iterator to `cursor`, when it restored a checkpoint or skipped items to get there. */
export function recordRestore(progress: AtroposProgress, cursor: number, from: number | null, fastForwarded: number): void {
  if (from !== null || fastForwarded > 0) progress.restored = { cursor, from, fastForwarded };
}

/**
 * Keeps a checkpoint (its data, or its key in the store) unless it saved nothing or stands behind the one kept (taken
 * by a worker whose iterator had not caught up).
 */
export function keepCheckpoint(progress: AtroposProgress, step: number, checkpoint: AtroposCheckpoint): void {
  if ((checkpoint.data === null || checkpoint.data === undefined) && !checkpoint.ref) return;
  if (progress.checkpoint && checkpoint.cursor < progress.checkpoint.cursor) return;
  progress.checkpoint = { ...checkpoint, step };
}

/** `atroposEvaluate`'s answer in Clotho's form: its numeric metrics, with `eval/percent_correct` as percentCorrect. */
export function evaluationResult(step: number, evaluated: AtroposEvaluated): EvaluationResult {
  const raw = typeof evaluated.metrics === 'object' && evaluated.metrics !== null ? evaluated.metrics : {};
  const metrics = Object.fromEntries(
    Object.entries(raw).filter((entry): entry is [string, number] => typeof entry[1] === 'number' && Number.isFinite(entry[1])),
  );
  return { step, metrics, percentCorrect: metrics['eval/percent_correct'] ?? null };
}
