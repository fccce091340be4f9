import { describe, expect, it } from 'vitest';
import type { GroupRef } from '../schema/batcher.js';
import { info, registerEnv, status, wandbInfo } from './batcher-envs.js';
import {
  dropBatch,
  recordDrops,
  ackBatch,
  batcherMetrics,
  createBatcherState,
  expireLeases,
  ingestGroup,
  ingestGroups,
  registerTrainer,
  renewLeases,
  resetData,
  takeBatch,
  waitingGroups,
  waitingGroupsPage,
  type BatcherOptions,
  type BatcherState,
} from './batcher-state.js';
import { leaseIdOf, parseLeaseId } from './messages.js';

const trainer = (batchSize: number, startingStep = 0) => ({
  wandb_group: 'grp',
  wandb_project: 'proj',
  batch_size: batchSize,
  max_token_len: 2048,
  checkpoint_dir: '/ckpt',
  save_checkpoint_interval: 10,
  starting_step: startingStep,
  num_steps: 100,
});

/** A registered, started batcher with envs of the given group sizes. */
function batcher(batchSize: number, groupSizes: number[] = [], options: Partial<BatcherOptions> = {}): BatcherState {
  const state = createBatcherState(options);
  registerTrainer(state, trainer(batchSize));
  takeBatch(state);
  for (const size of groupSizes) {
    registerEnv(state, { max_token_length: 1024, desired_name: 'env', weight: 1, group_size: size, min_batch_allocation: null }, 0);
  }
  return state;
}

let counter = 0;
const group = (size: number, envId: number | null = null, extra: Partial<GroupRef> = {}): GroupRef => {
  const id = extra.id ?? `g${counter++}`;
  return { id, ref: `store/${id}`, envId, size, ...extra };
};
const ids = (groups: readonly GroupRef[]) => groups.map((g) => g.id);
const served = (state: BatcherState, lease?: { now: number; durationMs: number }) => {
  const result = takeBatch(state, lease);
  return result.status === 'batch' ? result : null;
};

describe('trainer registration and plain endpoints', () => {
  it('answers like Atropos before and after /register', () => {
    const state = createBatcherState();
    expect(info(state)).toEqual({ batch_size: -1, max_token_len: -1 });
    expect(status(state)).toEqual({ current_step: 0, queue_size: 0 });
    expect(wandbInfo(state)).toEqual({ group: null, project: null });
    expect(takeBatch(state)).toEqual({ status: 'not_registered' });
    expect(state.started).toBe(false);

    expect(registerTrainer(state, trainer(4, 7))).toEqual({ initialised: true });
    expect(registerTrainer(state, trainer(99))).toEqual({ initialised: false });
    expect(info(state)).toEqual({ batch_size: 4, max_token_len: 2048 });
    expect(status(state)).toEqual({ current_step: 7, queue_size: 0 });
    expect(wandbInfo(state)).toEqual({ group: 'grp', project: 'proj' });
  });

  it('keeps groups posted before the trainer registered', () => {
    const state = createBatcherState();
    ingestGroup(state, group(2));
    registerTrainer(state, trainer(2));
    expect(served(state)?.groups).toHaveLength(1);
  });

  it('starts on the first batch request, even an empty one', () => {
    const state = createBatcherState();
    registerTrainer(state, trainer(4));
    expect(takeBatch(state)).toEqual({ status: 'empty' });
    expect(state.started).toBe(true);
  });
});

describe('ingest', () => {
  it('queues groups of the declared size, of no env or of an unknown env', () => {
    const state = batcher(8, [4]);
    const results = [group(4, 0), group(3, null), group(2, 7)].map((g) => ingestGroup(state, g));
    expect(results.map((r) => r.response)).toEqual([{ status: 'received' }, { status: 'received' }, { status: 'received' }]);
    expect(state.queue).toHaveLength(3);
    expect(state.latest?.envId).toBe(7);
  });

  it('buffers smaller groups until they add up to the group size, then queues them separately in order', () => {
    const state = batcher(8, [4]);
    const a = group(2, 0);
    const b = group(1, 0);
    const c = group(1, 0);
    expect(ingestGroup(state, a).response).toEqual({ status: 'buffered', buffer_size: 2 });
    expect(ingestGroup(state, b).response).toEqual({ status: 'buffered', buffer_size: 3 });
    expect(state.queue).toEqual([]);
    const last = ingestGroup(state, c);
    expect(last).toEqual({ response: { status: 'buffered', buffer_size: 0 }, outcome: 'buffered', released: 3 });
    expect(state.queue).toEqual([a, b, c]);
    expect(state.latest).toBe(c);
  });

  it('queues a group larger than the declared size instead of buffering it forever (Atropos bug)', () => {
    const state = batcher(8, [4]);
    const big = group(8, 0);
    expect(ingestGroup(state, big)).toEqual({ response: { status: 'received' }, outcome: 'oversize', released: 0 });
    expect(state.buffers).toEqual({});
    expect(served(state)?.groups).toEqual([big]);
    expect(state.counters.perEnv['0']?.oversize).toBe(1);
  });

  it('summarises a list the way /scored_data_list does', () => {
    const state = batcher(8, [4]);
    const list = ingestGroups(state, [group(2, 0), group(4, 0), group(1, 0)]);
    expect(list.response).toEqual({ status: 'received', groups_processed: 3, buffered: 2, last_buffer_size: 3 });
    expect(ingestGroups(state, [group(4, 0)]).response).toEqual({ status: 'received', groups_processed: 1 });
  });

  it('reports with every result the groups waiting once the list is in: queued, buffered or formed', () => {
    const state = batcher(4, [4]);
    expect(ingestGroups(state, [group(4, 0), group(4, 0), group(2, 0)]).results.map((r) => r.waiting)).toEqual([3, 3, 3]);
    served(state, { now: 0, durationMs: 10 });
    // One batch leased (with a trainer now), one formed and waiting, one group buffered.
    expect(ingestGroups(state, [group(4, null)]).results[0]?.waiting).toBe(3);
    expect(waitingGroups(state)).toBe(3);
  });

  it('drops and counts a group with no sequences', () => {
    const state = batcher(4);
    expect(ingestGroup(state, group(0, 1)).outcome).toBe('empty');
    expect(state.queue).toEqual([]);
    expect(state.counters.perEnv['1']?.dropped).toEqual({ empty: 1 });
  });
});

describe('drops counted by reason', () => {
  it("drops a group whose longest sequence reaches the trainer's max_token_len, as Atropos's envs do", () => {
    const state = batcher(4);
    const maxTokenLen = state.maxTokenLen;
    expect(ingestGroup(state, group(2, null, { longestSequence: maxTokenLen }))).toMatchObject({ outcome: 'too_long' });
    expect(ingestGroup(state, group(2, null, { longestSequence: maxTokenLen - 1 }))).toMatchObject({ outcome: 'queued' });
    expect(state.queue).toHaveLength(1);
    expect(state.counters.perEnv.none!.dropped).toEqual({ too_long: 1 });
  });

  it("adds the drops an env-run reports to its env's counters", () => {
    const state = batcher(4);
    recordDrops(state, 0, { scores_all_equal: 2 });
    recordDrops(state, 0, { scores_all_equal: 1, too_long: 1 });
    expect(state.counters.perEnv['0']!.dropped).toEqual({ scores_all_equal: 3, too_long: 1 });
  });
});

describe('idempotency keys', () => {
  it('does not queue a group whose key was seen, answering received', () => {
    const state = batcher(8, [4]);
    ingestGroup(state, group(2, 0, { id: 'k1' }));
    const again = ingestGroup(state, group(2, 0, { id: 'k1' }));
    expect(again).toEqual({ response: { status: 'received' }, outcome: 'duplicate', released: 0 });
    expect(state.buffers['0']).toHaveLength(1);
    expect(state.counters.perEnv['0']).toMatchObject({ received: 1, duplicates: 1 });
  });

  it('remembers the most recent keys only, up to the capacity, across a JSON round trip', () => {
    let state = batcher(100, [], { seenCapacity: 2 });
    for (const id of ['a', 'b', 'c']) ingestGroup(state, group(1, null, { id }));
    state = JSON.parse(JSON.stringify(state)) as BatcherState;
    expect(ingestGroup(state, group(1, null, { id: 'c' })).outcome).toBe('duplicate');
    expect(ingestGroup(state, group(1, null, { id: 'b' })).outcome).toBe('duplicate');
    expect(ingestGroup(state, group(1, null, { id: 'a' })).outcome).toBe('queued');
    // 'a' evicted 'b' from the ring.
    expect(ingestGroup(state, group(1, null, { id: 'b' })).outcome).toBe('queued');
  });
});

describe('staleness', () => {
  it('drops groups older than step - max_staleness, at ingest and when forming batches', () => {
    const state = batcher(2, [], { maxStaleness: 1 });
    ingestGroup(state, group(2, 0, { policyVersion: 0 }));
    served(state);
    expect(state.step).toBe(1);
    const waiting = group(1, 0, { policyVersion: 0 });
    expect(ingestGroup(state, waiting).outcome).toBe('queued');
    ingestGroup(state, group(2, 0, { policyVersion: 1 }));
    served(state);
    expect(state.step).toBe(2);
    // Now `waiting` (version 0 < 2 - 1) is stale: it must not pair with a fresh group of size 1.
    expect(ingestGroup(state, group(1, 0, { policyVersion: 0 })).outcome).toBe('stale');
    ingestGroup(state, group(1, 0, { policyVersion: 2 }));
    ingestGroup(state, group(1, 0, { policyVersion: null }));
    const batch = served(state);
    expect(batch?.groups.map((g) => g.policyVersion)).toEqual([2, null]);
    expect(state.counters.perEnv['0']?.dropped).toEqual({ stale: 2 });
    expect(state.queue).toEqual([]);
  });
});

describe('taking batches', () => {
  it('forms every batch at once, advances the step by their number and serves the newest first', () => {
    const state = batcher(2);
    const groups = [group(2), group(2), group(2)];
    for (const g of groups) ingestGroup(state, g);
    const first = served(state);
    expect(first).toMatchObject({ batchId: 'batch-3-3', groups: [groups[2]], leaseExpiresAt: null });
    expect(status(state)).toEqual({ current_step: 3, queue_size: 0 });
    ingestGroup(state, group(2));
    expect(served(state)?.batchId).toBe('batch-2-2');
    expect(served(state)?.batchId).toBe('batch-1-1');
    // Only when nothing pre-formed is left does the new group form a batch.
    expect(served(state)?.batchId).toBe('batch-4-4');
    expect(takeBatch(state)).toEqual({ status: 'empty' });
  });

  it('without a lease a batch is gone once served', () => {
    const state = batcher(2);
    ingestGroup(state, group(2));
    const batch = served(state);
    expect(batch?.leaseId).toBeNull();
    expect(ackBatch(state, batch?.batchId as string)).toBe('unknown');
    expect(expireLeases(state, Number.MAX_SAFE_INTEGER)).toEqual([]);
    expect(takeBatch(state)).toEqual({ status: 'empty' });
  });
});

describe('leases', () => {
  it('serves an unacked batch again after its lease expires', () => {
    const state = batcher(2);
    ingestGroup(state, group(2));
    const first = served(state, { now: 1000, durationMs: 50 });
    expect(first?.leaseExpiresAt).toBe(1050);
    expect(expireLeases(state, 1049)).toEqual([]);
    expect(takeBatch(state, { now: 1049, durationMs: 50 })).toEqual({ status: 'empty' });
    const again = served(state, { now: 1050, durationMs: 50 });
    expect(again).toMatchObject({ batchId: first?.batchId, groups: first?.groups, leaseExpiresAt: 1100 });
    // Each serving is its own lease; the first keeps the batch's id.
    expect([first?.leaseId, again?.leaseId]).toEqual(['batch-1-1', 'batch-1-1.lease-2']);
    expect(state.step).toBe(1);
    expect(state.counters).toMatchObject({ batchesServed: 2, batchesRedelivered: 1, leasesExpired: 1, batchesTaken: 0 });
  });

  it('counts a batch taken for good once: served without a lease, or acked, not served under a lease', () => {
    const state = batcher(2);
    ingestGroup(state, group(2));
    ingestGroup(state, group(2));
    const leased = served(state, { now: 0, durationMs: 10 });
    expect(state.counters.batchesTaken).toBe(0);
    expect(ackBatch(state, leased?.leaseId as string, 5)).toBe('acked');
    expect(state.counters.batchesTaken).toBe(1);
    expect(served(state)?.leaseId).toBeNull();
    expect(state.counters.batchesTaken).toBe(2);
  });

  it('never serves an acked batch again', () => {
    const state = batcher(2);
    ingestGroup(state, group(2));
    const batch = served(state, { now: 0, durationMs: 10 });
    expect(ackBatch(state, batch?.leaseId as string, 9)).toBe('acked');
    expect(ackBatch(state, batch?.leaseId as string, 9)).toBe('unknown');
    expect(takeBatch(state, { now: 100, durationMs: 10 })).toEqual({ status: 'empty' });
    expect(state.counters.batchesAcked).toBe(1);
  });

  it('refuses an ack that comes after the lease ran out, changing nothing: the batch is served again', () => {
    const state = batcher(2);
    ingestGroup(state, group(2));
    const batch = served(state, { now: 0, durationMs: 10 });
    const before = structuredClone(state);
    expect(ackBatch(state, batch?.leaseId as string, 10)).toBe('expired');
    // Only the lease ran out (as the next take would find); the batch waits to be served again.
    expect(expireLeases(before, 10)).toEqual([batch?.batchId]);
    expect(state).toEqual(before);
    expect(served(state, { now: 11, durationMs: 10 })?.groups).toEqual(batch?.groups);
  });

  it('lets only the trainer holding a batch now ack it: a slow one acking late neither clears nor loses it', () => {
    const state = batcher(2);
    ingestGroup(state, group(2));
    const a = served(state, { now: 0, durationMs: 10 })!;
    expect(takeBatch(state, { now: 5, durationMs: 10 })).toEqual({ status: 'empty' });
    const b = served(state, { now: 10, durationMs: 10 })!;
    expect(b.groups).toEqual(a.groups);
    const before = structuredClone(state);
    expect(ackBatch(state, a.leaseId!, 12)).toBe('expired');
    expect(state).toEqual(before);
    expect(takeBatch(state, { now: 19, durationMs: 10 })).toEqual({ status: 'empty' });
    // B crashes without acking: once its lease runs out the batch is served a third time.
    const c = served(state, { now: 20, durationMs: 10 })!;
    expect(c).toMatchObject({ batchId: a.batchId, leaseId: `${a.batchId}.lease-3`, groups: a.groups, step: a.step });
    expect(ackBatch(state, b.leaseId!, 21)).toBe('expired');
    expect(ackBatch(state, a.leaseId!, 21)).toBe('expired');
    expect(ackBatch(state, c.leaseId!, 21)).toBe('acked');
    expect([a, b, c].map((lease) => ackBatch(state, lease.leaseId!, 22))).toEqual(['unknown', 'unknown', 'unknown']);
    expect(takeBatch(state, { now: 100, durationMs: 10 })).toEqual({ status: 'empty' });
    expect(state.counters).toMatchObject({ batchesServed: 3, batchesRedelivered: 2, leasesExpired: 2, batchesAcked: 1, batchesTaken: 1 });
  });

  it('holds a renewed lease past its first end, so the batch is acked once and never served again', () => {
    const state = batcher(2);
    ingestGroup(state, group(2));
    const batch = served(state, { now: 0, durationMs: 10 })!;
    expect(renewLeases(state, [batch.leaseId!], 8, 10)).toEqual([{ leaseId: batch.leaseId, status: 'renewed', leaseExpiresAt: 18 }]);
    // A renewal never shortens a lease.
    expect(renewLeases(state, [batch.leaseId!], 9, 1)).toEqual([{ leaseId: batch.leaseId, status: 'renewed', leaseExpiresAt: 18 }]);
    expect(takeBatch(state, { now: 15, durationMs: 10 })).toEqual({ status: 'empty' });
    expect(ackBatch(state, batch.leaseId!, 17)).toBe('acked');
    expect(state.counters).toMatchObject({ leasesRenewed: 2, leasesExpired: 0, batchesServed: 1, batchesAcked: 1 });
  });

  it('answers each lease of a renewal apart: one that ran out is expired (its batch served again), another unknown', () => {
    const state = batcher(2);
    for (let i = 0; i < 2; i++) ingestGroup(state, group(2));
    const short = served(state, { now: 0, durationMs: 5 })!;
    const long = served(state, { now: 0, durationMs: 50 })!;
    const before = structuredClone(state);
    expect(renewLeases(state, [short.leaseId!, long.leaseId!, 'nope'], 6, 50)).toEqual([
      { leaseId: short.leaseId, status: 'expired', leaseExpiresAt: null },
      { leaseId: long.leaseId, status: 'renewed', leaseExpiresAt: 56 },
      { leaseId: 'nope', status: 'unknown', leaseExpiresAt: null },
    ]);
    expect(expireLeases(before, 6)).toEqual([short.batchId]);
    expect(state.formed).toEqual(before.formed);
    expect(served(state, { now: 7, durationMs: 5 })).toMatchObject({ batchId: short.batchId, leaseId: `${short.batchId}.lease-2` });
  });

  it('knows no lease that was never served: a later delivery, a formed batch, an id of another shape', () => {
    const state = batcher(2);
    for (let i = 0; i < 2; i++) ingestGroup(state, group(2));
    const leased = served(state, { now: 0, durationMs: 10 })!;
    const waiting = state.formed[0]!;
    for (const id of [`${leased.batchId}.lease-2`, `${leased.batchId}.lease-1`, `${leased.batchId}.lease-02`, waiting.batchId, 'nope']) {
      expect(ackBatch(state, id, 1), id).toBe('unknown');
    }
    expect(state.leases).toHaveLength(1);
  });

  it('acks by the derived lease ids a state carried from before leases had ids of their own', () => {
    // What the batcher held then: a batch served twice, leased again, no lease id anywhere.
    const carried = JSON.parse(
      JSON.stringify({
        ...batcher(2),
        leases: [{ batchId: 'batch-1-1', step: 1, groups: [group(2)], deliveries: 2, leaseExpiresAt: 50 }],
      }),
    ) as BatcherState;
    expect(ackBatch(carried, 'batch-1-1', 10)).toBe('expired');
    expect(ackBatch(carried, 'batch-1-1.lease-2', 10)).toBe('acked');
  });

  it('derives lease ids from the batch id and the delivery, and reads them back', () => {
    expect([1, 2, 3].map((n) => leaseIdOf('batch-4-9', n))).toEqual(['batch-4-9', 'batch-4-9.lease-2', 'batch-4-9.lease-3']);
    expect(parseLeaseId('batch-4-9.lease-3')).toEqual({ batchId: 'batch-4-9', delivery: 3 });
    expect(parseLeaseId('batch-4-9')).toEqual({ batchId: 'batch-4-9', delivery: 1 });
    expect(parseLeaseId('batch-4-9.lease-1')).toEqual({ batchId: 'batch-4-9.lease-1', delivery: 1 });
  });

  it('puts several expired batches back earliest lease first', () => {
    const state = batcher(2);
    for (let i = 0; i < 3; i++) ingestGroup(state, group(2));
    const a = served(state, { now: 0, durationMs: 10 });
    const b = served(state, { now: 1, durationMs: 10 });
    expect(expireLeases(state, 20)).toEqual([a?.batchId, b?.batchId]);
    expect(served(state)?.batchId).toBe(a?.batchId);
    expect(served(state)?.batchId).toBe(b?.batchId);
    expect(served(state)?.batchId).toBe('batch-1-1');
  });
});

describe('reset', () => {
  it('forgets trainer, envs and groups like /reset_data, keeping max_token_len, and counts the drops', () => {
    const state = batcher(4, [4], { maxStaleness: 5 });
    const queued = [group(2, 0), group(4, 0), group(4, 0), group(4, 0)];
    for (const g of queued) ingestGroup(state, g);
    const leased = served(state, { now: 0, durationMs: 10 });
    const dropped = resetData(state);
    expect(new Set(ids(dropped))).toEqual(new Set(ids(queued)));
    expect(leased?.groups).toHaveLength(1);
    expect(info(state)).toEqual({ batch_size: -1, max_token_len: 2048 });
    expect(wandbInfo(state)).toEqual({ group: null, project: null });
    expect(status(state)).toEqual({ current_step: 0, queue_size: 0 });
    expect(takeBatch(state)).toEqual({ status: 'not_registered' });
    expect(state.counters.perEnv['0']?.dropped).toEqual({ reset: 4 });
    // Keys are forgotten with the data, so a fresh run may reuse them.
    expect(ingestGroup(state, { ...(queued[1] as GroupRef) }).outcome).toBe('queued');
    registerTrainer(state, trainer(8, 3));
    expect(status(state)).toEqual({ current_step: 3, queue_size: 1 });
    expect(state.options.maxStaleness).toBe(5);
  });
});

describe('continue-as-new', () => {
  it('behaves the same after the state went through JSON', () => {
    const run = (roundTrip: boolean) => {
      let state = batcher(4, [2, 4], { maxStaleness: 3 });
      const outputs: unknown[] = [];
      for (let i = 0; i < 40; i++) {
        outputs.push(
          ingestGroup(state, group([1, 2, 4][i % 3] as number, i % 3 === 0 ? null : i % 2, { id: `k${i % 37}`, policyVersion: i % 5 })),
        );
        if (i % 7 === 0) outputs.push(takeBatch(state, { now: i, durationMs: 5 }));
        if (i % 11 === 0) outputs.push(ackBatch(state, `batch-${i / 11}-${i / 11}`));
        if (roundTrip && i % 5 === 0) state = JSON.parse(JSON.stringify(state)) as BatcherState;
      }
      return { outputs, metrics: batcherMetrics(state) };
    };
    expect(run(true)).toEqual(run(false));
  });
});

describe('metrics', () => {
  it('reports what waits where and what happened, per env', () => {
    const state = batcher(4, [4]);
    ingestGroups(state, [group(4, 0), group(2, 0), group(4, 0), group(4, 0), group(1, null)]);
    served(state, { now: 0, durationMs: 5 });
    const metrics = batcherMetrics(state);
    expect(metrics).toMatchObject({
      step: 3,
      waitingGroups: 4,
      queueGroups: 1,
      queueSequences: 1,
      bufferedGroups: 1,
      formedBatches: 2,
      leasedBatches: 1,
      waiting: { '0': { queued: 0, buffered: 1 }, none: { queued: 1, buffered: 0 } },
    });
    expect(metrics.counters.perEnv['0']).toMatchObject({ received: 4, queued: 3, buffered: 1, served: 1 });
    expect(metrics.counters).toMatchObject({ batchesFormed: 3, batchesServed: 1 });
  });
});

describe('the waiting groups, a page at a time', () => {
  it('lists formed, queued and buffered groups without changing the state, and leaves out leased ones', () => {
    const state = batcher(4, [4]);
    const [a, b, c, d, e] = [group(4, 0), group(4, 0), group(4, 0), group(2, 0), group(1, null)];
    ingestGroups(state, [a!, b!, c!, d!, e!]);
    // Three batches form ([a], [b], [c]); the newest goes out under a lease; e waits in the queue, d in env 0's buffer.
    const leased = served(state, { now: 0, durationMs: 5 })!;
    expect(ids(leased.groups)).toEqual([c!.id]);
    const before = JSON.stringify(state);
    const page = waitingGroupsPage(state, 0, 10);
    expect(page.total).toBe(waitingGroups(state));
    expect(ids(page.groups)).toEqual(ids([a!, b!, e!, d!]));
    expect(waitingGroupsPage(state, 1, 2)).toEqual({ total: 4, groups: [b, e] });
    expect(waitingGroupsPage(state, 4, 2)).toEqual({ total: 4, groups: [] });
    expect(waitingGroupsPage(state, -3, 1)).toEqual({ total: 4, groups: [a] });
    expect(waitingGroupsPage(state, 0, 0).groups).toEqual([]);
    expect(JSON.stringify(state)).toBe(before);
    // Taken without a lease, a batch is gone; a lease that ran out puts its batch back among the waiting.
    served(state);
    expect(ids(waitingGroupsPage(state, 0, 10).groups)).toEqual(ids([a!, e!, d!]));
    expect(ackBatch(state, 'no-such-lease', 10)).toBe('unknown');
    expect(ids(waitingGroupsPage(state, 0, 10).groups)).toEqual(ids([a!, c!, e!, d!]));
  });
});

describe('a batch a trainer refuses', () => {
  it('is removed and its groups counted as dropped, per env', () => {
    const state = batcher(4);
    ingestGroup(state, group(2, null));
    ingestGroup(state, group(2, null));
    const taken = served(state, { now: 0, durationMs: 1000 })!;
    dropBatch(state, taken.batchId, 'trainer_failed');
    expect(state.leases).toEqual([]);
    expect(served(state, { now: 2000, durationMs: 1000 })).toBeNull();
    expect(state.counters.perEnv.none!.dropped).toEqual({ trainer_failed: 2 });
  });
});
