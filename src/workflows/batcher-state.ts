import type { ScoredDataListResponse, TrainerRegistration } from '../schema/api.js';
import type {
  AckStatus,
  BatcherCounters,
  BatcherDropReason,
  BatcherIngestResult,
  BatcherMetrics,
  EnvCounters,
  GroupRef,
  LeaseRenewal,
  RecordDrops,
  RegisterTrainerResult,
  TakeResult,
  WaitingGroupsPage,
} from '../schema/batcher.js';
import { envAt, type EnvRecord } from './batcher-envs.js';
import { findGroupsSummingToTarget, formBatches } from './batcher-packing.js';
import { leaseIdOf, parseLeaseId } from './messages.js';

/**
 * The batcher's whole state as a plain JSON value, and the functions that change it: Atropos's API
 * server state and rules (ATROPOS-API.md §1.2–§1.7) plus Clotho's idempotency keys, staleness bound
 * and batch leases. Pure and deterministic (no clock, no randomness: callers pass `now`), so the
 * batcher workflow wraps it and carries it through continue-as-new. Functions change the state they
 * are given in place and return what the HTTP API answers.
 */

/** A batch formed at one step; `deliveries` counts how often it was served. */
export interface FormedBatch {
  batchId: string;
  /** The step this batch advanced the counter to (its training step). */
  step: number;
  groups: GroupRef[];
  deliveries: number;
}

/**
 * A served batch that must be acknowledged before `leaseExpiresAt`, or it is served again. Its id is not stored:
 * it follows from the batch id and `deliveries` ({@link leaseIdOf}), so states carried through continue-as-new
 * from before leases had ids of their own load unchanged.
 */
export interface Lease extends FormedBatch {
  leaseExpiresAt: number;
}

export interface BatcherOptions {
  /** Drop a group whose `policyVersion` is older than `step - maxStaleness`; null keeps all. @default null */
  maxStaleness: number | null;
  /**
   * Idempotency keys remembered, the most recent ones: a key comes back as a duplicate only while it
   * is among the last `seenCapacity` accepted. Bounded so the state stays far below Temporal's 2 MiB
   * payload limit through continue-as-new (10,000 keys of ~40 characters ≈ 0.5 MB). The HTTP API keeps
   * a durable record of older keys in the trajectory store; this window catches a retry that comes
   * before that record is written. @default 10000
   */
  seenCapacity: number;
}

export interface BatcherState {
  /** Set by the first `/register`; cleared by `/reset_data`. */
  registered: boolean;
  wandbGroup: string | null;
  wandbProject: string | null;
  batchSize: number;
  maxTokenLen: number;
  checkpointDir: string;
  saveCheckpointInterval: number;
  numSteps: number;
  /** Batches formed so far, from `starting_step` (Atropos's `status_dict.step`). */
  step: number;
  /** True from the trainer's first batch request. */
  started: boolean;
  envs: EnvRecord[];
  /** FIFO queue of groups ready to pack. */
  queue: GroupRef[];
  /** Per env id: groups smaller than the env's group size, waiting to add up to it. */
  buffers: Record<string, GroupRef[]>;
  /** Formed, not yet served; the last is served first (Atropos's LIFO `curr_batch`). */
  formed: FormedBatch[];
  leases: Lease[];
  latest: GroupRef | null;
  /** Ring of the last accepted idempotency keys; `next` is the slot overwritten next once full. */
  seen: { ids: string[]; next: number };
  /** Batches ever formed; keeps batch ids unique across resets. */
  batchSeq: number;
  options: BatcherOptions;
  counters: BatcherCounters;
}

/** A fresh state, as before any `/register`. */
export function createBatcherState(options: Partial<BatcherOptions> = {}): BatcherState {
  return {
    registered: false,
    wandbGroup: null,
    wandbProject: null,
    batchSize: -1,
    maxTokenLen: -1,
    checkpointDir: '',
    saveCheckpointInterval: -1,
    numSteps: -1,
    step: 0,
    started: false,
    envs: [],
    queue: [],
    buffers: {},
    formed: [],
    leases: [],
    latest: null,
    seen: { ids: [], next: 0 },
    batchSeq: 0,
    options: { maxStaleness: options.maxStaleness ?? null, seenCapacity: options.seenCapacity ?? 10_000 },
    counters: { batchesFormed: 0, batchesServed: 0, batchesRedelivered: 0, batchesAcked: 0, batchesTaken: 0, leasesExpired: 0, perEnv: {} },
  };
}

/** Counter key of an env id. */
export function envKey(envId: number | null): string {
  return envId === null ? 'none' : String(envId);
}

function countersOf(state: BatcherState, envId: number | null): EnvCounters {
  const key = envKey(envId);
  return (state.counters.perEnv[key] ??= {
    received: 0,
    queued: 0,
    oversize: 0,
    buffered: 0,
    released: 0,
    duplicates: 0,
    dropped: {},
    served: 0,
  });
}

function countDrop(state: BatcherState, group: GroupRef, reason: BatcherDropReason): void {
  const dropped = countersOf(state, group.envId).dropped;
  dropped[reason] = (dropped[reason] ?? 0) + 1;
}

/** `POST /register`: the first call (or the first after a reset) takes the trainer's settings; later ones change nothing. */
export function registerTrainer(state: BatcherState, registration: TrainerRegistration): RegisterTrainerResult {
  if (state.registered) return { initialised: false };
  // Groups posted before the trainer registered stay queued (Atropos would lose its settings instead).
  Object.assign(state, {
    registered: true,
    wandbGroup: registration.wandb_group,
    wandbProject: registration.wandb_project,
    batchSize: registration.batch_size,
    maxTokenLen: registration.max_token_len,
    checkpointDir: registration.checkpoint_dir,
    saveCheckpointInterval: registration.save_checkpoint_interval,
    numSteps: registration.num_steps,
    step: registration.starting_step,
    started: false,
  });
  return { initialised: true };
}

// Lookup sets for the ring of seen keys, rebuilt from the array when absent (a new run after
// continue-as-new, or a copied state); keyed by the array itself so it can never go out of date.
const seenIndex = new WeakMap<string[], Set<string>>();

function seenSet(state: BatcherState): Set<string> {
  let set = seenIndex.get(state.seen.ids);
  if (!set) seenIndex.set(state.seen.ids, (set = new Set(state.seen.ids)));
  return set;
}

function remember(state: BatcherState, id: string): void {
  const { seen } = state;
  const capacity = state.options.seenCapacity;
  if (capacity <= 0) return;
  const set = seenSet(state);
  if (seen.ids.length < capacity) {
    seen.ids.push(id);
  } else {
    set.delete(seen.ids[seen.next] as string);
    seen.ids[seen.next] = id;
    seen.next = (seen.next + 1) % capacity;
  }
  set.add(id);
}

function isStale(state: BatcherState, group: GroupRef): boolean {
  const { maxStaleness } = state.options;
  return maxStaleness !== null && group.policyVersion != null && group.policyVersion < state.step - maxStaleness;
}

function enqueue(state: BatcherState, group: GroupRef): void {
  state.queue.push(group);
  state.latest = group;
}

/**
 * `POST /scored_data` (ATROPOS-API.md §1.4). A group smaller than its env's group size waits in that
 * env's buffer until buffered groups add up to exactly the group size, then those go to the queue as
 * separate groups. A larger group is queued whole (in Atropos it stayed buffered forever): the packer
 * handles mixed sizes. Repeated keys and dropped groups answer `received` too, so senders do not retry.
 */
export function ingestGroup(state: BatcherState, group: GroupRef): BatcherIngestResult {
  const counters = countersOf(state, group.envId);
  const received = { status: 'received' } as const;
  if (seenSet(state).has(group.id)) {
    counters.duplicates++;
    return { response: received, outcome: 'duplicate', released: 0 };
  }
  remember(state, group.id);
  counters.received++;
  // Atropos queues an empty group, where it can never be packed; here it is at least counted.
  const tooLong = state.maxTokenLen > 0 && (group.longestSequence ?? 0) >= state.maxTokenLen;
  const drop = group.size < 1 ? 'empty' : isStale(state, group) ? 'stale' : tooLong ? 'too_long' : null;
  if (drop) {
    countDrop(state, group, drop);
    return { response: received, outcome: drop, released: 0 };
  }
  const env = envAt(state, group.envId);
  if (env && group.size < env.group_size) {
    const buffer = (state.buffers[envKey(group.envId)] ??= []);
    buffer.push(group);
    counters.buffered++;
    const picked = new Set(
      findGroupsSummingToTarget(
        buffer.map((g) => g.size),
        env.group_size,
      ),
    );
    const release = buffer.filter((_, i) => picked.has(i));
    for (const g of release) enqueue(state, g);
    counters.released += release.length;
    const kept = buffer.filter((_, i) => !picked.has(i));
    state.buffers[envKey(group.envId)] = kept;
    const bufferSize = kept.reduce((sum, g) => sum + g.size, 0);
    return { response: { status: 'buffered', buffer_size: bufferSize }, outcome: 'buffered', released: release.length };
  }
  enqueue(state, group);
  counters.queued++;
  if (env && group.size > env.group_size) counters.oversize++;
  return { response: received, outcome: env && group.size > env.group_size ? 'oversize' : 'queued', released: 0 };
}

/** Counts groups an env-run dropped before delivery (equal scores, say), so that metrics show every drop. */
export function recordDrops(state: BatcherState, envId: number | null, dropped: RecordDrops['dropped']): void {
  const counters = countersOf(state, envId).dropped;
  for (const [reason, n] of Object.entries(dropped) as [keyof RecordDrops['dropped'], number][])
    counters[reason] = (counters[reason] ?? 0) + n;
}

/** `POST /scored_data_list`: each group as `ingestGroup`, with Atropos's summary of the buffered ones. */
export function ingestGroups(
  state: BatcherState,
  groups: readonly GroupRef[],
): { response: ScoredDataListResponse; results: BatcherIngestResult[] } {
  const ingested = groups.map((group) => ingestGroup(state, group));
  const waiting = waitingGroups(state);
  const results = ingested.map((result) => ({ ...result, waiting }));
  const response: ScoredDataListResponse = { status: 'received', groups_processed: groups.length };
  const buffered = results.flatMap((r) => (r.response.status === 'buffered' ? [r.response.buffer_size] : []));
  if (buffered.length > 0) {
    response.buffered = buffered.length;
    response.last_buffer_size = buffered[buffered.length - 1] as number;
  }
  return { response, results };
}

function formAll(state: BatcherState): void {
  const fresh = state.queue.filter((group) => !isStale(state, group));
  if (fresh.length < state.queue.length) {
    for (const group of state.queue) if (isStale(state, group)) countDrop(state, group, 'stale');
  }
  const { batches, rest } = formBatches(fresh, state.batchSize, state.envs);
  state.queue = rest;
  for (const [i, groups] of batches.entries()) {
    state.batchSeq++;
    state.formed.push({ batchId: `batch-${state.step + i + 1}-${state.batchSeq}`, step: state.step + i + 1, groups, deliveries: 0 });
  }
  // The step counts batches formed, not consumed (ATROPOS-API.md §1.7).
  state.step += batches.length;
  state.counters.batchesFormed += batches.length;
}

/**
 * `GET /batch` (ATROPOS-API.md §1.5): serve the newest pre-formed batch, else form every batch the
 * queue allows and serve the last. Without `lease` the batch is gone once served, as in Atropos; with
 * one it must be acked before `now + durationMs` or `expireLeases` serves it again. `oldest` serves
 * pre-formed batches in step order instead.
 */
export function takeBatch(
  state: BatcherState,
  lease?: { now: number; durationMs: number },
  order: 'newest' | 'oldest' = 'newest',
): TakeResult {
  if (!state.registered) return { status: 'not_registered' };
  state.started = true;
  if (lease) expireLeases(state, lease.now);
  if (state.formed.length === 0) formAll(state);
  // Atropos serves the newest pre-formed batch; a trainer fed step by step takes them in step order.
  const batch = order === 'newest' ? state.formed.pop() : state.formed.shift();
  if (!batch) return { status: 'empty' };
  batch.deliveries++;
  state.counters.batchesServed++;
  if (batch.deliveries > 1) state.counters.batchesRedelivered++;
  for (const group of batch.groups) countersOf(state, group.envId).served++;
  const leaseExpiresAt = lease ? lease.now + lease.durationMs : null;
  if (leaseExpiresAt !== null) state.leases.push({ ...batch, leaseExpiresAt });
  else countTaken(state);
  const leaseId = leaseExpiresAt === null ? null : leaseIdOf(batch.batchId, batch.deliveries);
  return { status: 'batch', batchId: batch.batchId, leaseId, step: batch.step, groups: batch.groups, leaseExpiresAt };
}

/**
 * Acknowledge a leased batch by the lease id it was served with. Only the live lease can: an ack for a lease that
 * ran out changes nothing, since the batch is (or will be) served to another trainer, whose own ack must not be
 * preempted by the slow one's and whose crash must bring the batch back. With `now`, leases run out first.
 */
export function ackBatch(state: BatcherState, leaseId: string, now?: number): AckStatus {
  if (now !== undefined) expireLeases(state, now);
  const found = liveLease(state, leaseId);
  if (typeof found === 'string') return found;
  state.leases.splice(state.leases.indexOf(found), 1);
  state.counters.batchesAcked++;
  countTaken(state);
  return 'acked';
}

/**
 * Holds each live lease of `leaseIds` until `now + durationMs` at least (a renewal never shortens a lease). Leases run
 * out first, so a renewal after its lease's end is `expired`, as an ack would be: the batch is served again.
 */
export function renewLeases(state: BatcherState, leaseIds: readonly string[], now: number, durationMs: number): LeaseRenewal[] {
  expireLeases(state, now);
  return leaseIds.map((leaseId) => {
    const found = liveLease(state, leaseId);
    if (typeof found === 'string') return { leaseId, status: found, leaseExpiresAt: null };
    found.leaseExpiresAt = Math.max(found.leaseExpiresAt, now + durationMs);
    state.counters.leasesRenewed = (state.counters.leasesRenewed ?? 0) + 1;
    return { leaseId, status: 'renewed', leaseExpiresAt: found.leaseExpiresAt };
  });
}

/** The live lease a lease id names, or why there is none: it ran out or the batch was served again, or it is unknown. */
function liveLease(state: BatcherState, leaseId: string): Lease | 'expired' | 'unknown' {
  const { batchId, delivery } = parseLeaseId(leaseId);
  const leased = state.leases.find((l) => l.batchId === batchId);
  if (leased && leased.deliveries === delivery) return leased;
  const batch = leased ?? state.formed.find((b) => b.batchId === batchId);
  return batch && delivery <= batch.deliveries ? 'expired' : 'unknown';
}

/** A batch a trainer took for good (served without a lease, or acked); batchers from before count from here on. */
function countTaken(state: BatcherState): void {
  state.counters.batchesTaken = (state.counters.batchesTaken ?? 0) + 1;
}

/** Removes a served batch that a trainer refused for good, counting its groups as dropped with that reason. */
export function dropBatch(state: BatcherState, batchId: string, reason: BatcherDropReason): void {
  const batch = [...state.leases, ...state.formed].find((b) => b.batchId === batchId);
  if (!batch) return;
  state.leases = state.leases.filter((b) => b.batchId !== batchId);
  state.formed = state.formed.filter((b) => b.batchId !== batchId);
  for (const group of batch.groups) countDrop(state, group, reason);
}

/** Put batches whose lease ran out by `now` back to be served next, earliest lease first. Returns their ids. */
export function expireLeases(state: BatcherState, now: number): string[] {
  const expired = state.leases.filter((l) => l.leaseExpiresAt <= now);
  if (expired.length === 0) return [];
  state.leases = state.leases.filter((l) => l.leaseExpiresAt > now);
  for (const { leaseExpiresAt: _, ...batch } of expired.slice().reverse()) state.formed.push(batch);
  state.counters.leasesExpired += expired.length;
  return expired.map((l) => l.batchId);
}

/**
 * `GET /reset_data` (ATROPOS-API.md §1.3): forget the trainer, envs and all groups, keeping only
 * `max_token_len` (as Atropos does), `checkpoint_dir`, the counters and the batch sequence. Returns
 * the discarded groups, each counted as dropped with reason `reset`.
 */
export function resetData(state: BatcherState): GroupRef[] {
  const dropped = [
    ...state.queue,
    ...Object.values(state.buffers).flat(),
    ...state.formed.flatMap((b) => b.groups),
    ...state.leases.flatMap((l) => l.groups),
  ];
  for (const group of dropped) countDrop(state, group, 'reset');
  const { maxTokenLen, checkpointDir, saveCheckpointInterval, latest, batchSeq, counters, options } = state;
  Object.assign(state, createBatcherState(options), { maxTokenLen, checkpointDir, saveCheckpointInterval, latest, batchSeq, counters });
  return dropped;
}

/** Groups taken in that wait for a trainer: queued, buffered, or in a formed batch (a leased one is with a trainer). */
export function waitingGroups(state: BatcherState): number {
  const buffered = Object.values(state.buffers).reduce((sum, buffer) => sum + buffer.length, 0);
  return state.queue.length + buffered + state.formed.reduce((sum, batch) => sum + batch.groups.length, 0);
}

/**
 * The groups waiting for a trainer, `limit` of them from `offset`, read without changing anything (what
 * `GET /queue` shows): those in formed batches not served yet, then the queue (oldest first), then each env's
 * buffer (oldest first). A leased batch's groups are not included: they are with a trainer, not waiting (a lease
 * that ran out puts them back at the next take or ack). Negative offsets and limits read as 0.
 */
export function waitingGroupsPage(state: BatcherState, offset: number, limit: number): WaitingGroupsPage {
  const all = [...state.formed.flatMap((batch) => batch.groups), ...state.queue, ...Object.values(state.buffers).flat()];
  const from = Math.max(0, Math.floor(offset));
  return { total: all.length, groups: all.slice(from, from + Math.max(0, Math.floor(limit))) };
}

/** Metrics of the batcher now. */
export function batcherMetrics(state: BatcherState): BatcherMetrics {
  const waiting: BatcherMetrics['waiting'] = {};
  const slot = (envId: number | null) => (waiting[envKey(envId)] ??= { queued: 0, buffered: 0 });
  for (const group of state.queue) slot(group.envId).queued++;
  const buffered = Object.values(state.buffers).flat();
  for (const group of buffered) slot(group.envId).buffered++;
  return {
    step: state.step,
    waitingGroups: waitingGroups(state),
    queueGroups: state.queue.length,
    queueSequences: state.queue.reduce((sum, group) => sum + group.size, 0),
    bufferedGroups: buffered.length,
    formedBatches: state.formed.length,
    leasedBatches: state.leases.length,
    waiting,
    counters: state.counters,
  };
}
