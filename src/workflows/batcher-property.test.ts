import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GroupRef } from '../schema/batcher.js';
import { disconnectEnv, registerEnv, statusEnv } from './batcher-envs.js';
import { formBatches, type PackEnv, type Packable } from './batcher-packing.js';
import { ackBatch, createBatcherState, expireLeases, ingestGroup, registerTrainer, takeBatch, type BatcherState } from './batcher-state.js';

/**
 * The literal rule, one grab at a time as Atropos's `GET /batch` loop runs it (ATROPOS-API.md §1.5):
 * slow and obvious, the oracle for the fast packer.
 */
function oracleGrab(queue: readonly Packable[], batchSize: number, envs: readonly PackEnv[]): number[] | null {
  const max = Math.max(0, ...queue.map((g) => g.size));
  const packs = (byEnv: boolean) => {
    const open: Record<string, number[]> = {};
    const order: number[] = [];
    queue.forEach((g, i) => {
      const bucket = (open[byEnv ? `${g.envId}/${g.size}` : `${g.size}`] ??= []);
      bucket.push(i);
      if (bucket.length * g.size === max) order.push(...bucket.splice(0));
    });
    return order;
  };
  const mins = envs.filter((e) => e.connected && e.min_batch_allocation !== null);
  const size = (i: number) => (queue[i] as Packable).size;
  if (mins.length === 0) {
    let sum = 0;
    const batch: number[] = [];
    for (const i of packs(false)) {
      batch.push(i);
      sum += size(i);
      if (sum === batchSize) return batch;
      if (sum > batchSize) return null;
    }
    return null;
  }
  if (queue.length === 0) return null;
  const usable = packs(true).filter((i) => queue[i]?.envId !== null);
  const ofEnv = (id: number) => usable.filter((i) => queue[i]?.envId === id);
  const wanted: [number, number][] = [];
  for (const e of mins) {
    const min = Math.trunc(batchSize * (e.min_batch_allocation as number));
    if (min <= 0) continue;
    if (ofEnv(e.registered_id).length === 0) return null;
    wanted.push([e.registered_id, min]);
  }
  const sum = wanted.reduce((s, [, m]) => s + m, 0);
  if (sum > batchSize) {
    for (const w of wanted) w[1] = Math.max(Math.min(...ofEnv(w[0]).map(size)), Math.trunc(w[1] * (batchSize / sum)));
  }
  const batch: number[] = [];
  let total = 0;
  for (const [id, min] of wanted) {
    let mine = 0;
    for (const i of ofEnv(id)) {
      if (mine >= min) break;
      if (total + size(i) > batchSize) continue;
      batch.push(i);
      mine += size(i);
      total += size(i);
    }
  }
  for (const i of [...usable].sort((a, b) => a - b)) {
    if (total >= batchSize) break;
    if (batch.includes(i) || total + size(i) > batchSize) continue;
    batch.push(i);
    total += size(i);
  }
  return total === batchSize ? batch : null;
}

// Few sizes per queue, so small groups often complete packs; odd sizes sometimes, to test they are never used.
const queueArb = fc
  .constantFrom([1, 2], [1, 2, 4], [2, 4, 8], [1, 2, 4, 8, 3], [8, 16, 6])
  .chain((sizes) =>
    fc.array(fc.record({ size: fc.constantFrom(...sizes), envId: fc.constantFrom(null, 0, 0, 1, 1, 2, 3) }), { maxLength: 120 }),
  );
const envsArb = fc.array(
  fc.record({
    connected: fc.constantFrom(true, true, true, false),
    min_batch_allocation: fc.option(fc.constantFrom(0, 0.1, 0.25, 0.5, 0.7, 1.5), { nil: null, freq: 3 }),
  }),
  { maxLength: 4 },
);

describe('packing properties', () => {
  it('forms exactly the batches of repeated literal grabs; each sums to the batch size; nothing lost or doubled', () => {
    fc.assert(
      fc.property(queueArb, fc.constantFrom(2, 4, 8, 16, 32, 6, 12), envsArb, (raw, batchSize, rawEnvs) => {
        const queue = raw.map((g, position) => ({ ...g, position }));
        const envs = rawEnvs.map((e, registered_id) => ({ ...e, registered_id }));
        const { batches, rest } = formBatches(queue, batchSize, envs);

        let left: typeof queue = queue;
        for (const batch of batches) {
          const expected = oracleGrab(left, batchSize, envs);
          expect(batch).toEqual(expected?.map((i) => left[i]));
          left = left.filter((g) => !batch.includes(g));
          expect(batch.reduce((sum, g) => sum + g.size, 0)).toBe(batchSize);
        }
        expect(oracleGrab(left, batchSize, envs)).toBeNull();
        expect(rest).toEqual(left);
        const all = [...batches.flat(), ...rest].map((g) => g.position).sort((a, b) => a - b);
        expect(all).toEqual(queue.map((g) => g.position));
      }),
      { numRuns: 400 },
    );
  });

  it('serves groups of one size strictly first in, first out', () => {
    fc.assert(
      fc.property(fc.constantFrom(1, 2, 4, 8), fc.integer({ min: 0, max: 200 }), fc.integer({ min: 1, max: 8 }), (size, count, packs) => {
        const queue = Array.from({ length: count }, (_, position) => ({ size, envId: position % 3, position }));
        const { batches, rest } = formBatches(queue, size * packs, []);
        expect([...batches.flat(), ...rest]).toEqual(queue);
        expect(batches).toHaveLength(Math.floor(count / packs));
      }),
    );
  });
});

type Op =
  | { kind: 'ingest'; size: number; envId: number | null; key: number; version: number | null }
  | { kind: 'take'; lease: boolean }
  | { kind: 'ack'; pick: number }
  | { kind: 'tick'; ms: number }
  | { kind: 'statusEnv'; envId: number }
  | { kind: 'disconnect'; envId: number }
  | { kind: 'continueAsNew' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('ingest' as const),
      size: fc.constantFrom(1, 2, 4, 8, 3),
      envId: fc.constantFrom(null, 0, 1, 2, 9),
      key: fc.nat(60),
      version: fc.option(fc.nat(12), { nil: null }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('take' as const), lease: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('ack' as const), pick: fc.nat(10) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.nat(30) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('statusEnv' as const), envId: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('disconnect' as const), envId: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'continueAsNew' as const }) },
);

describe('batcher state properties', () => {
  it('accounts for every accepted group exactly once and serves only exact batches', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(4, 8, 16),
        fc.array(fc.record({ groupSize: fc.constantFrom(1, 2, 4, 8), min: fc.option(fc.constantFrom(0.1, 0.25, 0.5), { nil: null }) }), {
          maxLength: 3,
        }),
        fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
        fc.array(opArb, { maxLength: 150, size: 'max' }),
        (batchSize, envSpecs, maxStaleness, ops) => {
          let state: BatcherState = createBatcherState({ maxStaleness, seenCapacity: 1000 });
          registerTrainer(state, {
            wandb_group: 'g',
            wandb_project: 'p',
            batch_size: batchSize,
            max_token_len: 1,
            checkpoint_dir: '',
            save_checkpoint_interval: 1,
            starting_step: 0,
            num_steps: 1,
          });
          takeBatch(state);
          for (const spec of envSpecs) {
            registerEnv(
              state,
              { max_token_length: 100, desired_name: 'e', weight: 1, group_size: spec.groupSize, min_batch_allocation: spec.min },
              0,
            );
          }
          const accepted = new Set<string>();
          const gone = new Set<string>(); // served without a lease, or acked
          const batchOf = new Map<string, string>(); // group id → the one batch id it was served in
          const outstanding: { batchId: string; leaseId: string; groups: GroupRef[] }[] = [];
          const finished = new Set<string>();
          // The model of leases: per batch, the one lease that may ack it, until it runs out.
          const live = new Map<string, { leaseId: string; expiresAt: number }>();
          const expire = () => {
            for (const [batchId, lease] of live) if (lease.expiresAt <= now) live.delete(batchId);
          };
          let now = 0;
          for (const op of ops) {
            if (op.kind === 'ingest') {
              const id = `k${op.key}`;
              const result = ingestGroup(state, { id, ref: `r/${id}`, envId: op.envId, size: op.size, policyVersion: op.version });
              expect(result.outcome === 'duplicate').toBe(accepted.has(id));
              accepted.add(id);
            } else if (op.kind === 'take') {
              const result = takeBatch(state, op.lease ? { now, durationMs: 10 } : undefined);
              if (op.lease) expire();
              if (result.status !== 'batch') continue;
              expect(result.groups.reduce((sum, g) => sum + g.size, 0)).toBe(batchSize);
              expect(finished.has(result.batchId)).toBe(false);
              for (const g of result.groups) {
                expect(batchOf.get(g.id) ?? result.batchId).toBe(result.batchId);
                batchOf.set(g.id, result.batchId);
                if (!op.lease) gone.add(g.id);
              }
              if (op.lease) {
                outstanding.push({ ...result, leaseId: result.leaseId! });
                live.set(result.batchId, { leaseId: result.leaseId!, expiresAt: now + 10 });
              } else finished.add(result.batchId);
            } else if (op.kind === 'ack') {
              const [batch] = outstanding.splice(op.pick % Math.max(1, outstanding.length), 1);
              if (!batch) continue;
              const before = JSON.stringify(state);
              const status = ackBatch(state, batch.leaseId);
              if (live.get(batch.batchId)?.leaseId === batch.leaseId) {
                expect(status).toBe('acked');
                live.delete(batch.batchId);
                finished.add(batch.batchId);
                for (const g of batch.groups) gone.add(g.id);
              } else {
                // A lease that ran out or was superseded acks nothing and changes nothing.
                expect(status).toBe(finished.has(batch.batchId) ? 'unknown' : 'expired');
                expect(JSON.stringify(state)).toBe(before);
              }
            } else if (op.kind === 'tick') {
              now += op.ms;
              expireLeases(state, now);
              expire();
            } else if (op.kind === 'statusEnv') {
              statusEnv(state, op.envId);
            } else if (op.kind === 'disconnect') {
              disconnectEnv(state, op.envId);
            } else {
              state = JSON.parse(JSON.stringify(state)) as BatcherState;
            }
          }
          const waiting = [
            ...state.queue,
            ...Object.values(state.buffers).flat(),
            ...state.formed.flatMap((b) => b.groups),
            ...state.leases.flatMap((l) => l.groups),
          ].map((g) => g.id);
          const held = [...waiting, ...gone];
          expect(new Set(held).size).toBe(held.length);
          for (const id of held) expect(accepted.has(id)).toBe(true);
          const drops = Object.values(state.counters.perEnv).reduce(
            (sum, c) => sum + Object.values(c.dropped).reduce((a, b) => a + b, 0),
            0,
          );
          expect(held.length + drops).toBe(accepted.size);
          for (const batch of state.formed) expect(finished.has(batch.batchId)).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });
});
