/**
 * The trajectory API's speed: `/scored_data` ingest in groups per second for groups of 8 × 2,048 tokens, and
 * `GET /batch` latency at the median and 99th percentile. Each is measured against Clotho's durable API (the
 * batcher workflow and the trajectory store) and against an in-memory service behind the same HTTP app, which
 * keeps state the way Atropos does (in the process, lost on a crash): the ratio is the price of durability.
 * Then the bytes the trajectory store keeps per 1,000 delivered groups, as is (`--retention keep`) and with
 * `--retention ack` (delivered groups deleted), and what the deletion adds to `GET /batch`.
 *
 * Run: npm run bench:api [-- --groups 160 --posters 8]
 */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApi } from '../../src/api/app.js';
import { FakeTrajectoryService } from '../../test/support/fake-trajectory-service.js';
import { startApiServer } from '../../src/api/server.js';
import type { TrajectoryService } from '../../src/api/service.js';
import { createTemporalTrajectoryService } from '../../src/api/temporal-service.js';
import { ensureBatcher } from '../../src/cli/batcher.js';
import { parseRetention, retentionFor } from '../../src/store/retention.js';
import { FileSystemStore, type TrajectoryStore } from '../../src/store/trajectory-store.js';
import { startBatcherWorker } from '../../src/workers/workers.js';
import { startBenchTemporal } from '../support.js';

const { values } = parseArgs({ options: { groups: { type: 'string', default: '160' }, posters: { type: 'string', default: '8' } } });
const GROUPS = Number(values.groups);
const POSTERS = Number(values.posters);
const GROUP_SIZE = 8;
const TOKENS = 2048;
const BATCH_SIZE = 64;

/** One group's JSON body, as an Atropos environment posts it (tokens, masks, logprobs, scores). */
function groupBody(tag: number): string {
  const tokens = Array.from({ length: GROUP_SIZE }, (_, s) => Array.from({ length: TOKENS }, (_, t) => (tag * 7 + s * 13 + t) % 150_000));
  return JSON.stringify({
    tokens,
    masks: tokens.map((row) => row.map((id, t) => (t < 256 ? -100 : id))),
    inference_logprobs: tokens.map((row) => row.map((_, t) => (t < 256 ? 1 : -((t % 50) + 1) / 10))),
    scores: tokens.map((_, s) => (s % 2 === 0 ? 1 : -1)),
    env_id: 0,
  });
}

/** Bytes of every entry in the store. */
async function storedBytes(store: TrajectoryStore): Promise<number> {
  let bytes = 0;
  for await (const entry of store.list('')) bytes += entry.size;
  return bytes;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function measure(service: TrajectoryService, bodies: string[]) {
  const server = await startApiServer({ app: createApi({ service }), host: '127.0.0.1', port: 0 });
  const post = (path: string, body: string) => fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  try {
    await post('/register', JSON.stringify({ wandb_group: 'g', wandb_project: 'p', batch_size: BATCH_SIZE, max_token_len: 4096, checkpoint_dir: 'c', save_checkpoint_interval: 1, starting_step: 0, num_steps: 1000 }));
    await fetch(`${server.url}/batch`);
    await post('/register-env', JSON.stringify({ max_token_length: 4096, desired_name: 'bench', weight: 1, group_size: GROUP_SIZE }));

    const start = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: POSTERS }, async () => {
        while (next < bodies.length) {
          const response = await post('/scored_data', bodies[next++]!);
          if (!response.ok) throw new Error(`/scored_data answered ${response.status}: ${await response.text()}`);
          await response.arrayBuffer();
        }
      }),
    );
    const ingest = bodies.length / ((performance.now() - start) / 1000);

    const latencies: number[] = [];
    for (;;) {
      const t = performance.now();
      const { batch } = (await (await fetch(`${server.url}/batch`)).json()) as { batch: unknown[] | null };
      if (batch === null) break;
      latencies.push(performance.now() - t);
    }
    latencies.sort((a, b) => a - b);
    if (latencies.length !== (bodies.length * GROUP_SIZE) / BATCH_SIZE) throw new Error(`served ${latencies.length} batches`);
    return { ingest, p50: percentile(latencies, 50), p99: percentile(latencies, 99), batches: latencies.length };
  } finally {
    await server.close();
  }
}

async function main(): Promise<void> {
  const bodies = Array.from({ length: GROUPS }, (_, i) => groupBody(i));
  const megabytes = bodies.reduce((n, b) => n + b.length, 0) / 1e6;
  const memory = await measure(new FakeTrajectoryService(), bodies);

  const bench = await startBenchTemporal();
  try {
    const store = new FileSystemStore(await mkdtemp(join(bench.state, 'store-')));
    const worker = await startBatcherWorker({ address: bench.address, namespace: 'default', store });
    try {
      const batcherId = `bench-batcher-${Date.now()}`;
      await ensureBatcher(bench.client, batcherId, { trainer: { kind: 'http' } });
      const durable = await measure(createTemporalTrajectoryService({ client: bench.client, store, batcherId }), bodies);
      const ms = (x: number) => `${x.toFixed(1)} ms`;
      console.log(`${GROUPS} groups of ${GROUP_SIZE} × ${TOKENS} tokens (${megabytes.toFixed(0)} MB of JSON), ${POSTERS} posting at once; batches of ${BATCH_SIZE}`);
      console.log(`/scored_data  in-memory: ${memory.ingest.toFixed(1)} groups/s   durable: ${durable.ingest.toFixed(1)} groups/s   ratio ${(durable.ingest / memory.ingest).toFixed(3)}`);
      console.log(`/batch p50    in-memory: ${ms(memory.p50)}   durable: ${ms(durable.p50)}`);
      console.log(`/batch p99    in-memory: ${ms(memory.p99)}   durable: ${ms(durable.p99)}   (${durable.batches} batches)`);

      // The same groups again through a batcher whose API deletes what it delivered (`clotho api --retention ack`).
      const ackStore = new FileSystemStore(await mkdtemp(join(bench.state, 'store-ack-')));
      const ackBatcherId = `bench-batcher-ack-${Date.now()}`;
      await ensureBatcher(bench.client, ackBatcherId, { trainer: { kind: 'http' } });
      const { onDelivered } = retentionFor(ackStore, parseRetention('ack'));
      const acked = await measure(createTemporalTrajectoryService({ client: bench.client, store: ackStore, batcherId: ackBatcherId, onDelivered: onDelivered! }), bodies);
      const perThousand = async (s: TrajectoryStore) => ((await storedBytes(s)) / GROUPS) * 1000;
      const size = (bytes: number) => (bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(1)} kB`);
      console.log(`store kept per 1,000 delivered groups  --retention keep: ${size(await perThousand(store))}   ack: ${size(await perThousand(ackStore))}`);
      console.log(`/batch with --retention ack  p50: ${ms(acked.p50)}   p99: ${ms(acked.p99)}`);
    } finally {
      await worker.shutdown();
    }
  } finally {
    await bench.close();
  }
}

await main();
