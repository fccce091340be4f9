import { afterAll, describe, expect, inject, it } from 'vitest';
import { groupOfKey } from '../../src/store/retention.js';
import type { TrajectoryStore } from '../../src/store/trajectory-store.js';
import { apiClient, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { spawnClotho, waitFor } from '../support/cli.js';
import { gsm8kResponder, gsm8kCommand } from '../support/gsm8k-model.js';
import { ensureS3ServerBinary, startS3Server, type S3Server } from '../support/s3-server.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

const binary = await ensureS3ServerBinary();
if (binary.status === 'unreachable') console.warn(`S3 end-to-end tests skipped: ${binary.message}`);

let server: S3Server | undefined;
let api: ApiProcess | undefined;
let model: ScriptedOpenAI | undefined;
afterAll(async () => {
  await api?.stop();
  await model?.close();
  await server?.close();
});

/** The groups (`<run>/<env>/item-<i>`, `api/<hash>`) with blobs in the store. */
async function groupsIn(store: TrajectoryStore): Promise<Set<string>> {
  const groups = new Set<string>();
  for await (const entry of store.list('')) {
    const group = groupOfKey(entry.key);
    if (group) groups.add(group);
  }
  return groups;
}

describe.skipIf(binary.status !== 'ready')('--store s3:// on a real S3 server', () => {
  it('clotho serve feeds clotho api through the bucket, and --retention ack deletes each batch once the trainer acks it', async () => {
    server = await startS3Server((binary as { path: string }).path);
    await server.createBucket('clotho');
    const url = `s3://clotho/${uniqueId('e2e')}`;
    const address = inject('temporalAddress');
    // Both processes find the server, credentials and region in the AWS variables, as a user's would.
    api = await startApiProcess({ temporalAddress: address, store: url, args: ['--retention', 'ack'], env: server.env });
    const store = server.store(url);
    // Every sample answers item 0 right: equal scores, dropped by the env-run before delivery.
    model = await startScriptedOpenAI({ responder: gsm8kResponder((item, sample) => item === 0 || sample === 0) });
    const http = apiClient(api.url);
    await http.post('/register', { ...TRAINER, batch_size: 4, num_steps: 3 });
    expect((await http.get('/batch')).json).toEqual({ batch: null });

    const runId = uniqueId('s3');
    const serve = spawnClotho(
      gsm8kCommand('serve', model.baseUrl, {
        'batcher-id': api.batcherId,
        'env.run_id': runId,
        'env.group_size': 2,
        'env.max_batches_offpolicy': 2,
        store: url,
      }),
      { ...server.env, TEMPORAL_ADDRESS: address },
    );
    try {
      const deleted: string[][] = [];
      for (let step = 0; step < 3; step++) {
        let taken: { batch: { tokens: number[][] }[] | null; batch_id?: string } = { batch: null };
        await waitFor(
          async () => {
            taken = (await http.get('/batch?lease_seconds=120')).json;
            return taken.batch !== null;
          },
          90_000,
          `batch ${step + 1}`,
        );
        // Leased, not acked: the batch's groups are all still in the bucket.
        const before = await groupsIn(store);
        expect((await http.post('/batch/ack', { batch_id: taken.batch_id })).json).toEqual({ status: 'success' });
        const after = await groupsIn(store);
        // The serve run only adds groups meanwhile: what went is what the ack deleted, one group per group served.
        const gone = [...before].filter((g) => !after.has(g));
        expect(gone).toHaveLength(taken.batch!.length);
        for (const group of gone) expect(group).toMatch(new RegExp(`^${runId}/gsm8k/item-[1-9]\\d*$`));
        deleted.push(gone);
      }
      expect(await serve.exited).toBe(0);
      expect(serve.stdout()).toMatch(/delivered \d+ groups; failed 0/);
      expect(new Set(deleted.flat()).size).toBe(6);
      // What no trainer acked stays: item 0, dropped by the env-run (a sweep by age would take it), and any groups
      // delivered after the last step.
      const left = await groupsIn(store);
      expect(left).toContain(`${runId}/gsm8k/item-0`);
      for (const group of deleted.flat()) expect(left.has(group)).toBe(false);
    } finally {
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
    }
  });
});
