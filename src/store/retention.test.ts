import { createHash } from 'node:crypto';
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleGroup } from '../../test/support/fake-trajectory-service.js';
import { ensureS3ServerBinary, startS3Server, type S3Server } from '../../test/support/s3-server.js';
import { waitFor } from '../../test/support/cli.js';
import { testConnection, uniqueId, uniqueTaskQueue } from '../../test/support/temporal.js';
import type { TrainStepInput } from '../activities/trainer.js';
import { createTemporalTrajectoryService } from '../api/temporal-service.js';
import { ScoredDataGroupSchema } from '../schema/scored-data.js';
import { registerTrainerUpdate } from '../workflows/messages.js';
import { batcher } from '../workflows/batcher.js';
import { startedBy } from '../cli/versions.js';
import { startBatcherWorker, type RunningWorkers } from '../workers/workers.js';
import { groupOfKey, parseDuration, parseRetention, retentionFor, sweepOldGroups } from './retention.js';
import { FileSystemStore, storeKey, type TrajectoryStore } from './trajectory-store.js';

const binary = await ensureS3ServerBinary();
if (binary.status === 'unreachable') console.warn(`S3 retention tests skipped: ${binary.message}`);

describe('--retention', () => {
  it('parses keep, ack, a duration and both', () => {
    expect(parseRetention('keep')).toEqual({ ack: false, maxAgeMs: null });
    expect(parseRetention('ack')).toEqual({ ack: true, maxAgeMs: null });
    expect(parseRetention('12h')).toEqual({ ack: false, maxAgeMs: 12 * 3_600_000 });
    expect(parseRetention('ack,7d')).toEqual({ ack: true, maxAgeMs: 7 * 86_400_000 });
    expect(parseRetention('90s, ack')).toEqual({ ack: true, maxAgeMs: 90_000 });
    expect(parseDuration('1.5m')).toBe(90_000);
    expect(parseDuration('250ms')).toBe(250);
    for (const bad of ['', 'never', 'ack,ack', '1h,2h', 'keep,ack', '0s', '-1h', '5 parsecs']) expect(() => parseRetention(bad)).toThrow();
  });

  it("finds the group of every key of a group, and of nothing else's", () => {
    expect(groupOfKey('run-1/gsm8k/item-3/turn-0/sample-1/call-2')).toBe('run-1/gsm8k/item-3');
    expect(groupOfKey('run-1/gsm8k/item-3/group')).toBe('run-1/gsm8k/item-3');
    expect(groupOfKey('run-1/gsm8k/item-3')).toBe('run-1/gsm8k/item-3');
    // An Atropos collect's groups under its attempt; the run's stored items and checkpoints belong to no group.
    expect(groupOfKey('run-1/gsm8k/item-3/attempt-2/group-0')).toBe('run-1/gsm8k/item-3');
    expect(groupOfKey(`run-1/gsm8k/items/${'a'.repeat(64)}`)).toBeNull();
    expect(groupOfKey(`run-1/gsm8k/checkpoints/${'a'.repeat(64)}`)).toBeNull();
    // A run id of several segments; an environment named like an item.
    expect(groupOfKey('team/run/env/item-0/parsed')).toBe('team/run/env/item-0');
    expect(groupOfKey('run/item-1/item-2/group')).toBe('run/item-1/item-2');
    expect(groupOfKey(`api/${'a'.repeat(64)}`)).toBe(`api/${'a'.repeat(64)}`);
    expect(groupOfKey('api-accepted/0123/4567')).toBeNull();
    expect(groupOfKey('batcher/state-abc')).toBeNull();
  });
});

let worker: RunningWorkers | undefined;
const taskQueue = uniqueTaskQueue('retention');
const dirs: string[] = [];
let server: S3Server | undefined;

beforeAll(async () => {
  const temporal = await testConnection();
  const dir = await mkdtemp(join(tmpdir(), 'clotho-retention-'));
  dirs.push(dir);
  worker = await startBatcherWorker({
    address: temporal.address,
    namespace: temporal.namespace,
    store: new FileSystemStore(dir),
    taskQueue,
  });
  if (binary.status === 'ready') {
    server = await startS3Server(binary.path);
    await server.createBucket('retention');
  }
});
afterAll(async () => {
  await worker?.shutdown();
  await server?.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function keys(store: TrajectoryStore): Promise<string[]> {
  const all: string[] = [];
  for await (const entry of store.list('')) all.push(entry.key);
  return all.sort();
}

/** The trainer's registration: batches of 4 sequences shorter than 10 tokens. */
const REGISTRATION = {
  wandb_group: '',
  wandb_project: '',
  batch_size: 4,
  max_token_len: 10,
  checkpoint_dir: '',
  save_checkpoint_interval: 1,
  starting_step: 0,
  num_steps: 10,
};

const apiKey = (idempotencyKey: string) => storeKey('api', createHash('sha256').update(idempotencyKey).digest('hex'));

/** A batcher of batches of 4 sequences (two groups of 2) for sequences shorter than 10 tokens, and its service. */
async function start(store: TrajectoryStore, report: (line: string) => void = () => undefined) {
  const { client } = await testConnection();
  const batcherId = uniqueId('batcher');
  const handle = await client.workflow.start(batcher, { taskQueue, workflowId: batcherId, args: [{ trainer: { kind: 'http' } }] });
  await handle.executeUpdate(registerTrainerUpdate, {
    args: [REGISTRATION],
  });
  const retention = retentionFor(store, parseRetention('ack'), report);
  const service = createTemporalTrajectoryService({ client, store, batcherId, onDelivered: retention.onDelivered! });
  const post = (length: number, ...ids: string[]) =>
    service.ingestGroups(ids.map((id) => ({ group: ScoredDataGroupSchema.parse(sampleGroup(2, length)), idempotencyKey: id })));
  return { service, post };
}

function retentionContract(name: string, open: () => Promise<TrajectoryStore>) {
  describe(`${name} store: retention`, () => {
    it('ack: deletes a batch once acked (not before, not on a wrong ack), one served without a lease at once, a refused group at once', async () => {
      const store = await open();
      const { service, post } = await start(store);
      await post(3, 'a', 'b', 'c', 'd', 'e', 'f');
      const groups = ['a', 'b', 'c', 'd', 'e', 'f'].map(apiKey);
      const present = async () => {
        const all = await keys(store);
        return groups.filter((k) => all.includes(k)).length;
      };
      expect(await present()).toBe(6);

      const leased = await service.takeBatch({ leaseSeconds: 60 });
      expect(leased.status).toBe('batch');
      expect(await present()).toBe(6);
      expect(await service.ackBatch('not-a-lease')).toBe('unknown');
      expect(await present()).toBe(6);
      expect(await service.ackBatch((leased as { batchId: string }).batchId)).toBe('acked');
      expect(await present()).toBe(4);

      // Atropos's GET /batch: no lease, the batch is the trainer's once served.
      expect((await service.takeBatch({})).status).toBe('batch');
      expect(await present()).toBe(2);

      // Too long for the trainer (10 tokens): refused, deleted at once. A repeated key keeps its first post's blob.
      expect(await post(12, 'long')).toEqual([{ status: 'dropped', reason: 'too_long' }]);
      expect(await post(3, 'e')).toEqual([{ status: 'received', duplicate: true }]);
      const after = await keys(store);
      expect(after).not.toContain(apiKey('long'));
      expect(await present()).toBe(2);
      // The record of accepted keys stays: a key is a duplicate for the batcher's whole life.
      expect(after.filter((k) => k.startsWith('api-accepted/'))).toHaveLength(7);
    });

    it('sweeps groups whose newest blob is older than the age, every blob of them, and nothing that is no group', async () => {
      const store = await open();
      await store.put('run/env/item-0/turn-0/prompt', { tokens: [1, 2, 3] });
      await store.put('run/env/item-0/group', { scores: [1] });
      await store.put(`api/${'b'.repeat(64)}`, { tokens: [] });
      await store.put('api-accepted/x/y', { idempotency_key: 'k' });
      await store.put('batcher/state-1', {});
      expect(await sweepOldGroups(store, 60_000)).toEqual({ groups: 0, bytes: 0 });
      expect(await keys(store)).toHaveLength(5);
      const later = await sweepOldGroups(store, 60_000, Date.now() + 120_000);
      expect(later.groups).toBe(2);
      expect(later.bytes).toBe(
        JSON.stringify({ tokens: [1, 2, 3] }).length + JSON.stringify({ scores: [1] }).length + JSON.stringify({ tokens: [] }).length,
      );
      expect(await keys(store)).toEqual(['api-accepted/x/y', 'batcher/state-1']);
    });
  });
}

retentionContract('directory', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'clotho-retention-store-'));
  dirs.push(dir);
  return new FileSystemStore(dir);
});

describe('--trainer temporal: retention ack', () => {
  it("deletes a batch's groups once a trainer's trainStep completes it, and not before", async () => {
    const temporal = await testConnection();
    const dir = await mkdtemp(join(tmpdir(), 'clotho-retention-trained-'));
    dirs.push(dir);
    const store = new FileSystemStore(dir);
    const { onDelivered } = retentionFor(store, parseRetention('ack'));
    const queue = uniqueTaskQueue('retention-trained');
    const trainerQueue = uniqueTaskQueue('retention-trainer');
    const batcherWorker = await startBatcherWorker({
      address: temporal.address,
      namespace: temporal.namespace,
      store,
      taskQueue: queue,
      onTrained: onDelivered!,
    });
    // The trainer holds each step until the test lets it finish: the blobs must outlive a batch in training.
    let finish: (() => void) | undefined;
    const training: string[][] = [];
    const native = await NativeConnection.connect({ address: temporal.address });
    const trainer = await Worker.create({
      connection: native,
      namespace: temporal.namespace,
      taskQueue: trainerQueue,
      activities: {
        trainStep: async (input: TrainStepInput) => {
          training.push(input.groups);
          await new Promise<void>((resolve) => (finish = resolve));
        },
      },
    });
    const trainerRun = trainer.run();
    try {
      const batcherId = uniqueId('batcher-trained');
      const handle = await temporal.client.workflow.start(batcher, {
        taskQueue: queue,
        workflowId: batcherId,
        args: [{ trainer: { kind: 'temporal', taskQueue: trainerQueue, heartbeatTimeoutMs: 30_000 } }],
        ...startedBy(true),
      });
      await handle.executeUpdate(registerTrainerUpdate, {
        args: [REGISTRATION],
      });
      const service = createTemporalTrajectoryService({ client: temporal.client, store, batcherId });
      await service.ingestGroups(['p', 'q'].map((id) => ({ group: ScoredDataGroupSchema.parse(sampleGroup(2, 3)), idempotencyKey: id })));
      const groups = ['p', 'q'].map(apiKey);
      await waitFor(() => training.length === 1, 30_000, 'the trainer to get the batch');
      expect([...training[0]!].sort()).toEqual([...groups].sort());
      expect(await keys(store)).toEqual(expect.arrayContaining(groups));
      finish!();
      await waitFor(async () => (await keys(store)).every((k) => !groups.includes(k)), 30_000, 'the trained groups to be deleted');
      if (process.env.CLOTHO_RECORD_HISTORIES === '1') {
        // A batcher that released a trained batch, for test/replay.
        await writeFile(
          new URL('../../test/replay/histories/batcher-trained-release.json', import.meta.url),
          historyToJSON(await handle.fetchHistory()),
        );
      }
      await handle.terminate();
    } finally {
      finish?.();
      trainer.shutdown();
      await trainerRun;
      await native.close();
      await batcherWorker.shutdown();
    }
  });
});

describe('directory store: sweep by age', () => {
  it('keeps a group while any of its blobs is newer than the age', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-retention-store-'));
    dirs.push(dir);
    const store = new FileSystemStore(dir);
    const hourAgo = new Date(Date.now() - 3_600_000);
    await store.put('run/env/item-0/turn-0/prompt', 1);
    await store.put('run/env/item-1/turn-0/prompt', 3);
    // Item 0 started an hour ago and is still going (its turn 1 is new); item 1 has been idle for an hour. A group's
    // records are one journal, as new as its last write.
    await utimes(join(dir, 'run/env/item-0.journal'), hourAgo, hourAgo);
    await utimes(join(dir, 'run/env/item-1.journal'), hourAgo, hourAgo);
    await store.put('run/env/item-0/turn-1/prompt', 2);
    expect((await sweepOldGroups(store, 30 * 60_000)).groups).toBe(1);
    expect(await keys(store)).toEqual(['run/env/item-0/turn-0/prompt', 'run/env/item-0/turn-1/prompt']);
  });
});

describe.skipIf(binary.status !== 'ready')('s3 store: retention', () => {
  let prefixes = 0;
  const s3 = () => server!.store(`s3://retention/t${prefixes++}`);
  retentionContract('s3', async () => s3());

  it('answers an ack when the store cannot delete (it is down), and says so', async () => {
    const store = s3();
    const lines: string[] = [];
    const { service, post } = await start(store, (line) => lines.push(line));
    await post(3, 'x', 'y');
    const leased = await service.takeBatch({ leaseSeconds: 60 });
    await server!.stop();
    try {
      expect(await service.ackBatch((leased as { batchId: string }).batchId)).toBe('acked');
    } finally {
      await server!.start();
    }
    expect(lines).toEqual([expect.stringMatching(/^retention: could not delete 2 delivered groups from the trajectory store: /)]);
    expect(await keys(store)).toEqual(expect.arrayContaining([apiKey('x'), apiKey('y')]));
  });
});
