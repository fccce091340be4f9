/**
 * The trajectory API's speed: `/scored_data` ingest in groups per second for groups of 8 × 2,048 tokens, and
 * `GET /batch` latency at the median and 99th percentile. Each is measured against Clotho's durable API (the
 * batcher workflow and the trajectory store) and against an in-memory service behind the same HTTP app, which
 * keeps state the way Atropos does (in the process, lost on a crash): the ratio is the price of durability.
 * Then the bytes the trajectory store keeps per 1,000 delivered groups, as is (`--retention keep`) and with
 * `--retention ack` (delivered groups deleted), and what the deletion adds to `GET /batch`.
 *
 * Atropos's own `run-api` (atroposlib from PyPI, in a venv under .clotho/ that the bench makes the first time) is
 * measured on the same load in each round, before Clotho's two variants; without PyPI it is skipped, with a message.
 * Each API runs in a process of its own, as in production (`clotho api` with its batcher's worker inside); this
 * process only posts. CPU time per group of each API process (and of Temporal's server for the durable one) is
 * printed beside groups/s: it moves far less with the machine's other load.
 *
 * Where a durable ingest's time went (V8 profiles of `clotho api`, `--cpu-prof-dir`; per group of 8 × 2,048 tokens):
 * zod validation 2.3–2.8 ms (now loops, 0.13 ms: `src/api/hot-path.ts`); serialising the parsed group again for
 * the store 1.5–1.8 ms plus 1 ms turning that string into bytes (now the posted bytes are written:
 * `src/api/stored-group.ts`); reading the body through the Fetch stream and JSON.parse 1.3–2 ms (now read from
 * Node's request; the parse stays); and one batcher update per 1.7 groups, each a workflow task costing a few ms of
 * CPU in this process (activation, the workflow thread's VM) and 1.5–5 ms in Temporal's server, 8 ms round trip
 * when idle and 35–70 ms under load (now one update in flight, about 4 groups each: `src/api/coalesce.ts`).
 *
 * `--baseline DIR` measures the durable API of another checkout too (before a change: `git archive <commit>` unpacked
 * in DIR, with node_modules linked), in the same rounds, against a Temporal server of its own.
 *
 * Run: npm run bench:api [-- --groups 160 --posters 8 --rounds 3 --no-atropos --cpu-prof-dir DIR --baseline DIR]
 */
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FileSystemStore, type TrajectoryStore } from '../../src/store/trajectory-store.js';
import { startBenchTemporal } from '../support.js';
import { ensureAtroposRunApi, startAtroposApi } from './atropos.js';
import { groupBody, percentile } from './bodies.js';
import { startClothoApi, startInMemoryApi, type ApiChild } from './processes.js';

const { values } = parseArgs({
  options: {
    groups: { type: 'string', default: '160' },
    posters: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
    'no-atropos': { type: 'boolean', default: false },
    'cpu-prof-dir': { type: 'string' },
    baseline: { type: 'string' },
  },
});
const GROUPS = Number(values.groups);
const POSTERS = Number(values.posters);
const ROUNDS = Number(values.rounds);
/** Where the API processes write V8 CPU profiles (`--cpu-prof-dir`), to see where their time goes. */
const PROFILES = values['cpu-prof-dir'];
const GROUP_SIZE = 8;
const TOKENS = 2048;
const BATCH_SIZE = 64;
const REGISTRATION = {
  wandb_group: 'g',
  wandb_project: 'p',
  batch_size: BATCH_SIZE,
  max_token_len: 4096,
  checkpoint_dir: 'c',
  save_checkpoint_interval: 1,
  starting_step: 0,
  num_steps: 1000,
};

/** Bytes of every entry in the store. */
async function storedBytes(store: TrajectoryStore): Promise<number> {
  let bytes = 0;
  for await (const entry of store.list('')) bytes += entry.size;
  return bytes;
}

/** `GET /info` after a trainer registered and `/reset_data`. */
async function infoAfterReset(url: string): Promise<unknown> {
  await fetch(`${url}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(REGISTRATION) });
  await fetch(`${url}/reset_data`);
  return (await fetch(`${url}/info`)).json();
}

type Figures = Awaited<ReturnType<typeof measureUrl>>;

/** CPU time a process has used so far, in ms (user + system, from /proc). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

/**
 * Registers a trainer and an env at `url`, posts every body (`POSTERS` at once), then takes every batch. `pids` are
 * the processes that serve the API (its own, and Temporal's server for the durable one), whose CPU time per group
 * ingested is counted: a figure that moves less with the machine's other load than groups/s.
 */
async function measureUrl(url: string, bodies: string[], pids: number[]) {
  const post = (path: string, body: string) =>
    fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await post('/register', JSON.stringify(REGISTRATION));
  await fetch(`${url}/batch`);
  await post('/register-env', JSON.stringify({ max_token_length: 4096, desired_name: 'bench', weight: 1, group_size: GROUP_SIZE }));

  const cpuBefore = pids.map(cpuMs);
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
  const cpuPerGroup = pids.map((pid, i) => (cpuMs(pid) - cpuBefore[i]!) / bodies.length);

  const latencies: number[] = [];
  for (;;) {
    const t = performance.now();
    const { batch } = (await (await fetch(`${url}/batch`)).json()) as { batch: unknown[] | null };
    if (batch === null) break;
    latencies.push(performance.now() - t);
  }
  latencies.sort((a, b) => a - b);
  if (latencies.length !== (bodies.length * GROUP_SIZE) / BATCH_SIZE) throw new Error(`served ${latencies.length} batches`);
  return { ingest, cpuPerGroup, p50: percentile(latencies, 50), p99: percentile(latencies, 99), batches: latencies.length };
}

/** The median round's figures, each figure on its own (rounds interleave the variants, so load hits all alike). */
function median(rounds: Figures[]): Figures {
  const mid = (pick: (f: Figures) => number) => {
    const sorted = rounds.map(pick).sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)]!;
  };
  const cpuPerGroup = rounds[0]!.cpuPerGroup.map((_, i) => mid((f) => f.cpuPerGroup[i]!));
  return { ingest: mid((f) => f.ingest), cpuPerGroup, p50: mid((f) => f.p50), p99: mid((f) => f.p99), batches: rounds[0]!.batches };
}

async function main(): Promise<void> {
  const bodies = Array.from({ length: GROUPS }, (_, i) => groupBody(i, GROUP_SIZE, TOKENS));
  const megabytes = bodies.reduce((n, b) => n + b.length, 0) / 1e6;
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  const cpuLine = (a: Figures | undefined, m: Figures, d: Figures) =>
    `${a ? `${a.cpuPerGroup[0]!.toFixed(2)} / ` : ''}${m.cpuPerGroup[0]!.toFixed(2)} / ${d.cpuPerGroup[0]!.toFixed(2)}+${d.cpuPerGroup[1]!.toFixed(2)}`;
  const rate = (f: Figures | undefined) => (f ? `${f.ingest.toFixed(1)} groups/s` : 'skipped');

  const installed = values['no-atropos'] ? { skipped: 'left out (--no-atropos)' } : await ensureAtroposRunApi();
  const atropos = 'runApi' in installed ? await startAtroposApi(installed.runApi) : undefined;
  if ('skipped' in installed) console.log(`Atropos run-api: ${installed.skipped}; measuring Clotho alone`);

  const bench = await startBenchTemporal();
  const temporals = [bench];
  const apis: ApiChild[] = [];
  const clothoApi = async (name: string, args: string[] = []) => {
    const dir = await mkdtemp(join(bench.state, `store-${name}-`));
    const api = await startClothoApi({
      temporalAddress: bench.address,
      batcherId: `bench-batcher-${name}-${Date.now()}`,
      store: dir,
      args,
      cpuProfDir: PROFILES,
    });
    apis.push(api);
    return { api, store: new FileSystemStore(dir) };
  };
  try {
    // Each API in a process of its own, as in production (`clotho api` runs its batcher's worker inside); this
    // process only posts and takes batches.
    const memoryApi = await startInMemoryApi(PROFILES);
    apis.push(memoryApi);
    const durable = await clothoApi('keep');
    let baseline: { api: ApiChild; serverPid: number } | undefined;
    if (values.baseline !== undefined) {
      const own = await startBenchTemporal();
      temporals.push(own);
      const api = await startClothoApi({
        temporalAddress: own.address,
        batcherId: `bench-baseline-${Date.now()}`,
        store: await mkdtemp(join(own.state, 'store-')),
        repo: values.baseline,
      });
      apis.push(api);
      baseline = { api, serverPid: own.serverPid };
    }
    const rounds: { atropos?: Figures; memory: Figures; durable: Figures; baseline?: Figures }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Atropos first in each round, then the in-memory and the durable variant of Clotho's app.
      const atroposFigures = atropos ? await measureUrl(atropos.url, bodies, [atropos.pid]) : undefined;
      const memory = await measureUrl(memoryApi.url, bodies, [memoryApi.pid]);
      const durableFigures = await measureUrl(durable.api.url, bodies, [durable.api.pid, bench.serverPid]);
      const baselineFigures = baseline ? await measureUrl(baseline.api.url, bodies, [baseline.api.pid, baseline.serverPid]) : undefined;
      if (baselineFigures) {
        console.log(
          `round ${round + 1}: baseline durable ${rate(baselineFigures)}   CPU ms/group ${baselineFigures.cpuPerGroup.map((x) => x.toFixed(2)).join('+')}`,
        );
      }
      rounds.push({
        memory,
        durable: durableFigures,
        ...(atroposFigures ? { atropos: atroposFigures } : {}),
        ...(baselineFigures ? { baseline: baselineFigures } : {}),
      });
      const vs = atroposFigures ? `   durable/Atropos ${(durableFigures.ingest / atroposFigures.ingest).toFixed(2)}` : '';
      console.log(
        `round ${round + 1}: Atropos ${rate(atroposFigures)}   in-memory ${rate(memory)}   durable ${rate(durableFigures)}   durable/in-memory ${(durableFigures.ingest / memory.ingest).toFixed(2)}${vs}   CPU ms/group ${cpuLine(atroposFigures, memory, durableFigures)}`,
      );
    }
    const memory = median(rounds.map((r) => r.memory));
    const kept = median(rounds.map((r) => r.durable));
    const ofAtropos = atropos ? median(rounds.map((r) => r.atropos!)) : undefined;
    console.log(
      `${GROUPS} groups of ${GROUP_SIZE} × ${TOKENS} tokens (${megabytes.toFixed(0)} MB of JSON), ${POSTERS} posting at once; batches of ${BATCH_SIZE}; median of ${ROUNDS} rounds`,
    );
    console.log(`/scored_data  Atropos run-api: ${rate(ofAtropos)}   Clotho in-memory: ${rate(memory)}   durable: ${rate(kept)}`);
    console.log(
      `              durable/in-memory ${(kept.ingest / memory.ingest).toFixed(3)}   durable/Atropos ${ofAtropos ? (kept.ingest / ofAtropos.ingest).toFixed(3) : 'n/a'}`,
    );
    const cpu = (f: Figures | undefined) => (f ? `${f.cpuPerGroup[0]!.toFixed(2)} ms` : 'n/a');
    console.log(
      `CPU per group ingested  Atropos run-api: ${cpu(ofAtropos)}   in-memory: ${cpu(memory)}   durable: ${cpu(kept)} in clotho api + ${kept.cpuPerGroup[1]!.toFixed(2)} ms in the Temporal server`,
    );
    const p = (f: Figures | undefined, pick: (f: Figures) => number) => (f ? ms(pick(f)) : 'n/a');
    console.log(`/batch p50    Atropos run-api: ${p(ofAtropos, (f) => f.p50)}   in-memory: ${ms(memory.p50)}   durable: ${ms(kept.p50)}`);
    console.log(
      `/batch p99    Atropos run-api: ${p(ofAtropos, (f) => f.p99)}   in-memory: ${ms(memory.p99)}   durable: ${ms(kept.p99)}   (${kept.batches} batches)`,
    );
    if (baseline) {
      const before = median(rounds.map((r) => r.baseline!));
      console.log(
        `baseline (${values.baseline}) durable: ${rate(before)}, /batch p50 ${ms(before.p50)} p99 ${ms(before.p99)}, CPU ${before.cpuPerGroup.map((x) => `${x.toFixed(2)} ms`).join(' + ')}; this tree's durable / baseline ${(kept.ingest / before.ingest).toFixed(2)}`,
      );
    }

    // Parity: what GET /info answers after /register and /reset_data, from both APIs.
    if (atropos) {
      const fresh = await clothoApi('reset');
      console.log(
        `GET /info after /register and /reset_data  Atropos run-api: ${JSON.stringify(await infoAfterReset(atropos.url))}   Clotho: ${JSON.stringify(await infoAfterReset(fresh.api.url))}`,
      );
    }

    // The same groups again through an API that deletes what it delivered (`clotho api --retention ack`).
    const acked = await clothoApi('ack', ['--retention', 'ack']);
    const ackFigures = await measureUrl(acked.api.url, bodies, []);
    const perThousand = async (s: TrajectoryStore, groups: number) => ((await storedBytes(s)) / groups) * 1000;
    const size = (bytes: number) => (bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(1)} kB`);
    console.log(
      `store kept per 1,000 delivered groups  --retention keep: ${size(await perThousand(durable.store, GROUPS * ROUNDS))}   ack: ${size(await perThousand(acked.store, GROUPS))}`,
    );
    console.log(`/batch with --retention ack  p50: ${ms(ackFigures.p50)}   p99: ${ms(ackFigures.p99)}`);
  } finally {
    for (const api of apis) await api.stop();
    await atropos?.stop();
    for (const temporal of temporals) await temporal.close();
  }
}

await main();
