import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { DevServer } from '../../temporal-dev/index.js';
import { waitFor } from '../support/cli.js';
import { apiClient, group, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { startIsolatedDevServer } from '../support/temporal.js';

let api: ApiProcess | undefined;
let server: DevServer | undefined;
afterEach(async () => {
  await api?.stop();
  await server?.stop();
  api = undefined;
  server = undefined;
});

const tags = (batch: { tokens: number[][] }[]) => batch.map((g) => g.tokens[0]![0]);

/** Registers a trainer (batch of 4 sequences = two groups of 2), serves one batch (step 1), then queues groups 10–13. */
async function prepare(http: ReturnType<typeof apiClient>) {
  await http.post('/register', TRAINER);
  await http.get('/batch');
  await http.post('/register-env', { max_token_length: 2048, desired_name: 'env', weight: 1, group_size: 2 });
  await http.post('/scored_data_list', [group(1), group(2)]);
  expect(tags((await http.get('/batch')).json.batch)).toEqual([1, 2]);
  for (const tag of [10, 11, 12, 13]) expect((await http.post('/scored_data', group(tag))).json).toEqual({ status: 'received' });
  expect((await http.get('/status')).json).toEqual({ current_step: 1, queue_size: 4 });
}

/** Every acknowledged group comes back once, and the step counter is where it was. */
async function expectEverythingOnce(http: ReturnType<typeof apiClient>) {
  expect((await http.get('/status')).json).toEqual({ current_step: 1, queue_size: 4 });
  const served = [...tags((await http.get('/batch')).json.batch), ...tags((await http.get('/batch')).json.batch)];
  expect(served.sort()).toEqual([10, 11, 12, 13]);
  expect((await http.get('/batch')).json).toEqual({ batch: null });
  expect((await http.get('/status')).json).toEqual({ current_step: 3, queue_size: 0 });
}

describe('the trajectory API loses nothing', () => {
  it('after kill -9 of the API process between /scored_data and /batch', async () => {
    api = await startApiProcess({ temporalAddress: inject('temporalAddress') });
    const http = apiClient(api.url);
    await prepare(http);
    api.run.child.kill('SIGKILL');
    expect(await api.run.exited).toBe('SIGKILL');
    await api.restart();
    await expectEverythingOnce(http);
  });

  it('after kill -9 of the Temporal server (its SQLite file kept) between /scored_data and /batch', async () => {
    const dbFile = join(await mkdtemp(join(tmpdir(), 'clotho-crash-')), 'temporal.sqlite');
    server = await startIsolatedDevServer({ dbFile });
    const port = server.port;
    api = await startApiProcess({ temporalAddress: server.address });
    const http = apiClient(api.url);
    await prepare(http);
    await server.kill();
    server = await startIsolatedDevServer({ dbFile, port });
    // The API reconnects by itself; wait until the batcher answers again.
    await waitFor(async () => (await http.get('/status')).status === 200, 60_000, 'the API to reach the restarted server');
    await expectEverythingOnce(http);
  });

  it('serves an unacked leased batch again, refuses the late ack of a lease that ran out, and survives the next trainer crashing', async () => {
    api = await startApiProcess({ temporalAddress: inject('temporalAddress') });
    const http = apiClient(api.url);
    await http.post('/register', TRAINER);
    await http.post('/scored_data_list', [group(1, 2, null), group(2, 2, null)]);
    const takeLeased = async (seconds: number, what: string) => {
      let taken: any;
      await waitFor(async () => (taken = (await http.get(`/batch?lease_seconds=${seconds}`)).json).batch !== null, 30_000, what);
      return taken;
    };
    // Trainer A leases the batch and is too slow: its lease runs out, and trainer B gets the same batch.
    const a = (await http.get('/batch?lease_seconds=1')).json;
    expect(tags(a.batch)).toEqual([1, 2]);
    expect(a.batch_id).toMatch(/^batch-1-\d+$/);
    expect(a.lease_expires_at).toBeGreaterThan(Date.now() / 1000);
    const b = await takeLeased(2, "A's lease to run out");
    expect(tags(b.batch)).toEqual([1, 2]);
    expect(b.batch_id).not.toBe(a.batch_id);

    // A acks late: refused, and B's lease stands (the batch is still held, not acked away).
    const late = await http.post('/batch/ack', { batch_id: a.batch_id });
    expect(late.status).toBe(409);
    expect(late.json).toEqual({ status: 'failure', error: expect.stringContaining('lease expired') });
    expect(tags((await http.get(`/batch/${b.batch_id}`)).json.batch)).toEqual([1, 2]);

    // B crashes without acking: once its lease runs out the batch is served a third time, whole.
    const c = await takeLeased(30, "B's lease to run out");
    expect(tags(c.batch)).toEqual([1, 2]);
    expect(new Set([a.batch_id, b.batch_id, c.batch_id]).size).toBe(3);
    for (const id of [c.batch_id, a.batch_id]) expect((await http.get(`/batch/${id}`)).json).toEqual({ batch: c.batch, batch_id: id });
    expect((await http.post('/batch/ack', { batch_id: b.batch_id })).status).toBe(409);
    expect((await http.post('/batch/ack', { batch_id: c.batch_id })).json).toEqual({ status: 'success' });

    // Acked: gone for good, under every lease id it ever had.
    expect((await http.get('/batch?lease_seconds=1')).json.batch).toBeNull();
    for (const id of [a.batch_id, b.batch_id, c.batch_id]) expect((await http.post('/batch/ack', { batch_id: id })).status).toBe(404);
    expect((await http.get('/status')).json.current_step).toBe(1);
  });
});
