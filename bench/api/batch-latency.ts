/**
 * `GET /batch` latency of the durable `clotho api` for the largest batch the README names (sft-gen's default,
 * group size 2 × 64 tasks per step = 128 sequences), each sequence 2,048 tokens as in `bench:api`: how far it stays
 * below the 10 s timeout Atropos's trainers give the call, which decides whether a plain served batch needs
 * redelivery (README, "A served batch"). A trainer polls as Atropos's example trainer does, one call at a time, while
 * the queue holds `--ahead` batches' worth of groups (each call forms batches from it); the API and its batcher
 * worker run in their own process, as in production.
 *
 * Run: node --import tsx bench/api/batch-latency.ts [-- --batches 100 --batch-size 128 --group-size 8 --ahead 10]
 */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startBenchTemporal } from '../support.js';
import { groupBody, percentile } from './bodies.js';
import { startClothoApi } from './processes.js';

const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '100' },
    'batch-size': { type: 'string', default: '128' },
    'group-size': { type: 'string', default: '8' },
    tokens: { type: 'string', default: '2048' },
    ahead: { type: 'string', default: '10' },
  },
});
const BATCHES = Number(values.batches);
const BATCH_SIZE = Number(values['batch-size']);
const GROUP_SIZE = Number(values['group-size']);
const TOKENS = Number(values.tokens);
const AHEAD = Number(values.ahead);
const GROUPS_PER_BATCH = BATCH_SIZE / GROUP_SIZE;

async function main(): Promise<void> {
  const temporal = await startBenchTemporal();
  const api = await startClothoApi({
    temporalAddress: temporal.address,
    batcherId: `bench-batch-latency-${Date.now()}`,
    store: await mkdtemp(join(temporal.state, 'store-')),
  });
  const post = (path: string, body: string) =>
    fetch(`${api.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  try {
    const registration = {
      wandb_group: '',
      wandb_project: '',
      batch_size: BATCH_SIZE,
      max_token_len: TOKENS + 1,
      checkpoint_dir: 'c',
      save_checkpoint_interval: 1,
      starting_step: 0,
      num_steps: BATCHES,
    };
    await post('/register', JSON.stringify(registration));
    await fetch(`${api.url}/batch`);
    await post('/register-env', JSON.stringify({ max_token_length: TOKENS + 1, desired_name: 'bench', weight: 1, group_size: GROUP_SIZE }));
    const bodies = Array.from({ length: GROUPS_PER_BATCH * AHEAD }, (_, i) => groupBody(i, GROUP_SIZE, TOKENS));
    const latencies: number[] = [];
    let bytes = 0;
    while (latencies.length < BATCHES) {
      // Refill the queue `AHEAD` batches deep, four posters at once, then take them one call at a time.
      let next = 0;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < bodies.length) {
            const response = await post('/scored_data', bodies[next++]!);
            if (!response.ok) throw new Error(`/scored_data answered ${response.status}`);
            await response.arrayBuffer();
          }
        }),
      );
      for (let i = 0; i < AHEAD && latencies.length < BATCHES; i++) {
        const t = performance.now();
        const text = await (await fetch(`${api.url}/batch`)).text();
        latencies.push(performance.now() - t);
        bytes = Math.max(bytes, text.length);
        const batch = (JSON.parse(text) as { batch: { tokens: unknown[] }[] | null }).batch;
        if (batch?.reduce((n, g) => n + g.tokens.length, 0) !== BATCH_SIZE)
          throw new Error(`a batch of other than ${BATCH_SIZE} sequences`);
      }
    }
    latencies.sort((a, b) => a - b);
    const ms = (x: number) => `${x.toFixed(1)} ms`;
    console.log(
      `GET /batch, durable clotho api: ${BATCHES} batches of ${BATCH_SIZE} sequences (${GROUPS_PER_BATCH} groups of ${GROUP_SIZE} × ${TOKENS} tokens, ` +
        `${(bytes / 1e6).toFixed(1)} MB of JSON each), the queue refilled ${AHEAD} batches deep`,
    );
    console.log(
      `p50 ${ms(percentile(latencies, 50))}   p99 ${ms(percentile(latencies, 99))}   max ${ms(latencies.at(-1)!)}   p99 / 10 s timeout: ${(percentile(latencies, 99) / 10_000).toFixed(4)}`,
    );
  } finally {
    await api.stop();
    await temporal.close();
  }
}

await main();
