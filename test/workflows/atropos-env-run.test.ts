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

/** Runs an atroposEnvRun of `totalGroups` groups to its end on a worker with `activities` in place of the Python worker's. */
async function runWith(activities: object, over: Partial<AtroposEnvRunInput> = {}) {
  const temporal = await testConnection();
  const queue = uniqueTaskQueue('atropos-env-run');
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
    ...over,
  };
  try {
    return await worker.runUntil(
      temporal.client.workflow.execute(atroposEnvRun, { taskQueue: queue, workflowId: `clotho/${runId}/fake`, args: [input] }),
    );
  } finally {
    await native.close();
  }
}

/** `atroposNextItem` over items 0…n-1, then None, several to a call; each call recorded in `asked`. */
function itemsUpTo(n: number, asked: { cursor: number; count?: number }[] = []) {
  return async ({ cursor, count }: { cursor: number; count?: number }) => {
    asked.push({ cursor, count });
    const items = Array.from({ length: Math.max(0, Math.min(cursor + (count ?? 1), n) - cursor) }, (_, i) => ({ n: cursor + i }));
    const exhausted = items.length < (count ?? 1);
    return { cursor, item: items[0] ?? null, items, exhausted, fastForwarded: 0, fastForwardSeconds: 0, restoredFrom: null };
  };
}

const scored = (key: string): AtroposCollected => ({
  status: 'scored',
  list: false,
  groupRefs: [{ key: `${key}/group-0` }],
  scores: [[1, 0]],
  dropped: [],
  backlog: [],
  seconds: 0,
});

describe('atroposEnvRun with its activities replaced, on the real dev server', () => {
  it('takes each item from the cursor once, serves put-back items again, and ends when the iterator is exhausted', async () => {
    const asked: { cursor: number; count?: number }[] = [];
    const collected: number[] = [];
    const delivered: StoreRef[] = [];
    // Items 0…4, then None, several to a call; odd items are declined the first time and put back (Atropos's backlog).
    const activities = {
      atroposNextItem: itemsUpTo(5, asked),
      async atroposCollect({ item, store }: { item: { n: number; again?: boolean }; store: { key: string } }): Promise<AtroposCollected> {
        collected.push(item.n);
        if (item.n % 2 === 1 && !item.again) {
          return { status: 'declined', reason: 'declined', dropped: [], backlog: [{ ...item, again: true }], seconds: 0 };
        }
        return scored(store.key);
      },
      async deliverToJsonl({ groups }: { groups: StoreRef[] }) {
        delivered.push(...groups);
        return groups.length;
      },
    };
    const result = await runWith(activities);
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
  });

  it('drops a group past its deadline (worker_timeout) as timeout and counts it, as envRun does, and goes on', async () => {
    const delivered: StoreRef[] = [];
    const activities = {
      atroposNextItem: itemsUpTo(3),
      // Item 1's collect runs past the group's 2 s deadline.
      async atroposCollect({ item, store }: { item: { n: number }; store: { key: string } }): Promise<AtroposCollected> {
        if (item.n === 1) await new Promise((resolve) => setTimeout(resolve, 6000));
        return scored(store.key);
      },
      async deliverToJsonl({ groups }: { groups: StoreRef[] }) {
        delivered.push(...groups);
        return groups.length;
      },
    };
    const result = await runWith(activities, { groupTimeoutSeconds: 2 });
    expect(result).toMatchObject({ completed: 3, delivered: 2, failed: 0, dropped: { timeout: 1 }, scoredGroups: 2 });
    expect(delivered.map((r) => /\/item-(\d+)\//.exec(r.key)![1]).sort()).toEqual(['0', '2']);
  });
});
