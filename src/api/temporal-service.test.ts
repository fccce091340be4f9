import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleGroup } from '../../test/support/fake-trajectory-service.js';
import { testConnection, uniqueId, uniqueTaskQueue } from '../../test/support/temporal.js';
import { ScoredDataGroupSchema } from '../schema/scored-data.js';
import { FileSystemStore, type TrajectoryStore } from '../store/trajectory-store.js';
import { batcherViewQuery, registerTrainerUpdate, renewLeasesUpdate, waitingGroupsQuery } from '../workflows/messages.js';
import { recordHistory } from '../../test/support/atropos.js';
import { startedBy } from '../cli/versions.js';
import { batcher } from '../workflows/batcher.js';
import { startBatcherWorker, type RunningWorkers } from '../workers/workers.js';
import { acceptedKeys } from './accepted-keys.js';
import type { TrajectoryService } from './service.js';
import { createTemporalTrajectoryService } from './temporal-service.js';

let root: string;
let store: FileSystemStore;
let worker: RunningWorkers;
const taskQueue = uniqueTaskQueue('api-service');

beforeAll(async () => {
  const temporal = await testConnection();
  root = await mkdtemp(join(tmpdir(), 'clotho-api-service-'));
  store = new FileSystemStore(root);
  worker = await startBatcherWorker({ address: temporal.address, namespace: temporal.namespace, store, taskQueue });
});
afterAll(async () => {
  await worker?.shutdown();
  await rm(root, { recursive: true, force: true });
});

/**
 * A registered batcher that remembers `seenCapacity` keys itself, with batches of `batchSize` sequences, and the service
 * in front of it on `serviceStore`.
 */
async function start(seenCapacity: number, serviceStore: TrajectoryStore = store, batchSize = 64) {
  const { client } = await testConnection();
  const batcherId = uniqueId('batcher');
  const handle = await client.workflow.start(batcher, {
    taskQueue,
    workflowId: batcherId,
    args: [{ trainer: { kind: 'http' }, options: { seenCapacity } }],
    // The Clotho version that started it, as runs record it (a committed history must: test/replay/baseline.ts).
    ...startedBy(false),
  });
  await handle.executeUpdate(registerTrainerUpdate, {
    args: [
      {
        wandb_group: '',
        wandb_project: '',
        batch_size: batchSize,
        max_token_len: 4096,
        checkpoint_dir: '',
        save_checkpoint_interval: 1,
        starting_step: 0,
        num_steps: 1,
      },
    ],
  });
  const service = createTemporalTrajectoryService({ client, store: serviceStore, batcherId });
  const queued = async () => (await handle.query(batcherViewQuery)).status.queue_size;
  return { service, batcherId, queued };
}

const keyed = (key: string) => ({ group: ScoredDataGroupSchema.parse(sampleGroup()), idempotencyKey: key });
const post = (service: TrajectoryService, ...keys: string[]) => service.ingestGroups(keys.map(keyed));

describe('the Temporal-backed service: idempotency keys for the whole run', () => {
  it('answers a key repeated after more than the batcher remembers as a duplicate, queueing nothing', async () => {
    const { service, queued } = await start(2);
    expect(await post(service, 'k1', 'k2', 'k3')).toEqual([{ status: 'received' }, { status: 'received' }, { status: 'received' }]);
    expect(await post(service, 'k4')).toEqual([{ status: 'received' }]);
    // k1 left the batcher's window of 2 long ago; the store's record still knows it, in a list too.
    expect(await post(service, 'k1')).toEqual([{ status: 'received', duplicate: true }]);
    expect(await post(service, 'k5', 'k2')).toEqual([{ status: 'received' }, { status: 'received', duplicate: true }]);
    expect(await queued()).toBe(5);
  });

  it('records a key whose record a crash lost, when the prompt retry finds it in the batcher window', async () => {
    // The store fails the first record: the batcher took the group in, the API died before recording its key.
    let failRecord = true;
    const crashing: TrajectoryStore = {
      get: (ref) => store.get(ref),
      tryGet: (key) => store.tryGet(key),
      delete: (key) => store.delete(key),
      deletePrefix: (prefix) => store.deletePrefix(prefix),
      list: (prefix) => store.list(prefix),
      async put(key, value) {
        if (key.startsWith('api-accepted/') && failRecord) {
          failRecord = false;
          throw new Error('crash between the batcher update and the record');
        }
        return store.put(key, value);
      },
    };
    const { service, batcherId, queued } = await start(2, crashing);
    await expect(post(service, 'lost')).rejects.toThrow(/crash/);
    expect(await acceptedKeys(store, batcherId).has('lost')).toBe(false);
    expect(await queued()).toBe(1);
    // The env retries at once: the batcher's window answers, and the record is written now.
    expect(await post(service, 'lost')).toEqual([{ status: 'received', duplicate: true }]);
    expect(await acceptedKeys(store, batcherId).has('lost')).toBe(true);
    await post(service, 'a', 'b', 'c');
    expect(await post(service, 'lost')).toEqual([{ status: 'received', duplicate: true }]);
    expect(await queued()).toBe(4);
  });
});

describe('the Temporal-backed service: the waiting groups (GET /queue)', () => {
  it('reads a page from the batcher and the store, leaving out a group whose blob went since the query', async () => {
    const { service, batcherId } = await start(10);
    const before = Date.now() / 1000;
    await post(service, 'w1', 'w2', 'w3');
    const page = await service.waitingGroups({ offset: 0, limit: 10 });
    expect(page.total).toBe(3);
    expect(page.groups.map((g) => g.id)).toEqual(['w1', 'w2', 'w3']);
    expect(page.groups[0]).toMatchObject({ envId: null, policyVersion: null, group: ScoredDataGroupSchema.parse(sampleGroup()) });
    expect(page.groups[0]!.receivedAt).toBeGreaterThanOrEqual(Math.floor(before));
    expect((await service.waitingGroups({ offset: 2, limit: 5 })).groups.map((g) => g.id)).toEqual(['w3']);
    // Under --retention a group's blob goes once the trainer has it: one gone between the query and the read waits no more.
    const { client } = await testConnection();
    const refs = await client.workflow.getHandle(batcherId).query(waitingGroupsQuery, { offset: 1, limit: 1 });
    await store.delete(refs.groups[0]!.ref);
    expect(await service.waitingGroups({ offset: 0, limit: 10 })).toMatchObject({ total: 3, groups: [{ id: 'w1' }, { id: 'w3' }] });
  });
});

describe('the Temporal-backed service: lease renewals (POST /batch/renew)', () => {
  it('holds a renewed lease longer, answers one that ran out as expired, and leaves a refused renewal out of the history', async () => {
    const { service, batcherId } = await start(10, store, 2);
    await post(service, 'r1', 'r2');
    const held = await service.takeBatch({ leaseSeconds: 600 });
    const lapsed = await service.takeBatch({ leaseSeconds: 0.001 });
    if (held.status !== 'batch' || lapsed.status !== 'batch') throw new Error(`no batches: ${held.status}, ${lapsed.status}`);
    const [renewed, expired] = await service.renewLeases([held.batchId, lapsed.batchId], 3600);
    expect(renewed).toMatchObject({ batch_id: held.batchId, status: 'renewed' });
    expect(renewed!.lease_expires_at).toBeGreaterThan(held.leaseExpiresAt! + 2999);
    expect(expired).toEqual({ batch_id: lapsed.batchId, status: 'expired', lease_expires_at: null });
    expect(await service.renewLeases([], 10)).toEqual([]);
    const handle = (await testConnection()).client.workflow.getHandle(batcherId);
    const length = (await handle.describe()).historyLength;
    const refused = (leaseIds: string[], durationMs: number) =>
      handle.executeUpdate(renewLeasesUpdate, { args: [{ leaseIds, durationMs }] }).then(
        () => 'accepted',
        (error: { cause?: { message?: string } }) => error.cause?.message,
      );
    expect(await refused([], 1000)).toMatch(/leaseIds must be a non-empty list/);
    expect(await refused(['x'], -1)).toMatch(/durationMs must be a positive number/);
    expect((await handle.describe()).historyLength).toBe(length);
    expect(await service.ackBatch(held.batchId)).toBe('acked');
    expect(await service.metrics()).toMatchObject({ leasesRenewed: 1, leasesExpired: 1, supersessionErrors: 0 });
    await recordHistory('batcher-renewed-leases.json', batcherId);
  });
});
