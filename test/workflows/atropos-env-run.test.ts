import { NativeConnection, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import type { AtroposCollected, AtroposEnvRunInput } from '../../src/schema/atropos.js';
import type { StepOptions, StoreRef } from '../../src/schema/rollout.js';
import { atroposEnvRun } from '../../src/workflows/atropos-env-run.js';
import { workflowBundle } from '../../src/workers/bundle.js';
import { testConnection, uniqueId, uniqueTaskQueue } from '../support/temporal.js';

const step: StepOptions = {
  startToCloseTimeoutMs: 10_000,
  initialIntervalMs: 100,
  backoffCoefficient: 1,
  maximumIntervalMs: 100,
  maximumAttempts: 1,
  local: false,
};

describe('atroposEnvRun with its activities replaced, on the real dev server', () => {
  it('takes each item from the cursor once, serves put-back items again, and ends when the iterator is exhausted', async () => {
    const temporal = await testConnection();
    const queue = uniqueTaskQueue('atropos-env-run');
    const asked: { cursor: number; count?: number }[] = [];
    const collected: number[] = [];
    const delivered: StoreRef[] = [];
    // Items 0…4, then None, several to a call; odd items are declined the first time and put back (Atropos's backlog).
    const activities = {
      async atroposNextItem({ cursor, count }: { cursor: number; count?: number }) {
        asked.push({ cursor, count });
        const items = Array.from({ length: Math.max(0, Math.min(cursor + (count ?? 1), 5) - cursor) }, (_, i) => ({ n: cursor + i }));
        const exhausted = items.length < (count ?? 1);
        return { cursor, item: items[0] ?? null, items, exhausted, fastForwarded: 0, fastForwardSeconds: 0, restoredFrom: null };
      },
      async atroposCollect({ item, store }: { item: { n: number; again?: boolean }; store: { key: string } }): Promise<AtroposCollected> {
        collected.push(item.n);
        if (item.n % 2 === 1 && !item.again) {
          return { status: 'declined', reason: 'declined', dropped: [], backlog: [{ ...item, again: true }], seconds: 0 };
        }
        const ref = { key: `${store.key}/group-0` };
        return { status: 'scored', list: false, groupRefs: [ref], scores: [[1, 0]], dropped: [], backlog: [], seconds: 0 };
      },
      async deliverToJsonl({ groups }: { groups: StoreRef[] }) {
        delivered.push(...groups);
        return groups.length;
      },
    };
    const native = await NativeConnection.connect({ address: temporal.address });
    const worker = await Worker.create({
      connection: native,
      namespace: temporal.namespace,
      taskQueue: queue,
      workflowBundle: await workflowBundle(),
      activities,
    });
    const runId = uniqueId('atropos');
    const input: AtroposEnvRunInput = {
      runId,
      environment: 'fake',
      configDigest: 'd',
      totalGroups: 10,
      maxInFlight: 2,
      sink: { kind: 'jsonl', path: '/dev/null' },
      groupSize: 2,
      storeRoot: '/tmp',
      taskQueues: { workflows: queue, atropos: queue },
      steps: { next: step, collect: step, deliver: step },
      searchAttributes: false,
    };
    try {
      const result = await worker.runUntil(
        temporal.client.workflow.execute(atroposEnvRun, { taskQueue: queue, workflowId: `clotho/${runId}/fake`, args: [input] }),
      );
      // Both slots free at the start: one call for two items; then each call starts where the last one's items ended.
      expect(asked[0]).toEqual({ cursor: 0, count: 2 });
      const ends = asked.map(({ cursor, count }) => Math.min(cursor + count!, 5));
      expect(asked.slice(1).map((a) => a.cursor)).toEqual(ends.slice(0, -1));
      expect(ends.at(-1)).toBe(5);
      expect(collected.sort()).toEqual([0, 1, 1, 2, 3, 3, 4]);
      expect(result).toMatchObject({
        nextItem: 7,
        completed: 7,
        delivered: 5,
        failed: 0,
        dropped: { declined: 2 },
        cursor: 5,
        exhausted: true,
      });
      expect(result.backlog).toEqual([]);
      expect(new Set(delivered.map((r) => r.key)).size).toBe(5);
    } finally {
      await native.close();
    }
  });
});
