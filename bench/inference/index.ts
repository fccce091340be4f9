/**
 * Clotho's share of a real engine's throughput. For each concurrency c: tokens per second generated through an
 * env-run (group size 1, c groups in flight, so c generate calls at once) divided by tokens per second of c loops
 * calling the same embedded engine directly with the request Clotho sends (n = 1, logprobs, token ids).
 * Tokens are counted from the returned token ids, never assumed: the engine has no ignore_eos, so a sample may
 * end early. Engine, workers, dev server and baseline share the machine, as they do in `clotho process`.
 *
 * Run: npm run bench:inference   (or: node --import tsx bench/inference/index.ts [--model generate:0.5b]
 *      [--requests 12] [--rounds 2] [--max-tokens 64] [--concurrency 1,4,8] [--threads N])
 */
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { startLocalEngine } from '../../src/inference/local/start.js';
import { createOpenAIClient } from '../../src/inference/openai-client.js';
import type { InferenceClient } from '../../src/inference/types.js';
import { ServerConfigSchema } from '../../src/config/schemas.js';
import { MASKED, ScoredDataGroupSchema } from '../../src/schema/scored-data.js';
import { benchMessages, startBenchTemporal, startBenchWorkers, type BenchWorkers } from '../support.js';

const FlagsSchema = z.strictObject({
  model: z.string().min(1).default('generate:tiny'),
  /** Requests (direct) and groups (Clotho) per concurrency and side, split over the rounds (at least 2 × c a round). */
  requests: z.coerce.number().int().positive().default(12),
  rounds: z.coerce.number().int().positive().default(2),
  'max-tokens': z.coerce.number().int().positive().default(64),
  concurrency: z
    .string()
    .default('1,4,8')
    .transform((s) => s.split(',').map(Number))
    .pipe(z.array(z.number().int().positive()).min(1)),
  threads: z.coerce.number().int().positive().optional(),
});
const { values } = parseArgs({
  options: Object.fromEntries(['model', 'requests', 'rounds', 'max-tokens', 'concurrency', 'threads'].map((k) => [k, { type: 'string' }])),
});
const flags = FlagsSchema.parse(values);
const MAX_TOKENS = flags['max-tokens'];
// At least two waves per round: while a round fills and drains fewer than c requests are in flight, on both sides.
const perRound = (c: number) => Math.max(Math.ceil(flags.requests / flags.rounds), 2 * c);
const SLOTS = Math.max(...flags.concurrency);
// The 0.5b model at 8 slots on two cores takes tens of seconds per call: never let Temporal time one out.
const GENERATE_TIMEOUT_S = 600;

interface Measure {
  tokens: number;
  seconds: number;
}
const rate = (m: Measure) => m.tokens / m.seconds;
const sum = (ms: Measure[]): Measure => ({ tokens: ms.reduce((a, m) => a + m.tokens, 0), seconds: ms.reduce((a, m) => a + m.seconds, 0) });

/** `requests` requests from `concurrency` loops; tokens are the returned token ids. */
async function direct(inference: InferenceClient, concurrency: number, requests: number, maxTokens: number): Promise<Measure> {
  let next = 0;
  let tokens = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < requests; i = next++) {
        const [completion] = await inference.generate({ messages: benchMessages(i), n: 1, maxTokens, temperature: 1, topP: 1 });
        if (!completion?.tokenIds) throw new Error('the engine returned no token ids');
        tokens += completion.tokenIds.length;
      }
    }),
  );
  return { tokens, seconds: (performance.now() - start) / 1000 };
}

/** The same requests as groups of one through an env-run; tokens are the delivered groups' trained positions. */
async function clotho(workers: BenchWorkers, concurrency: number, requests: number): Promise<Measure> {
  const { wallMs, sinkPath } = await workers.run(requests, concurrency);
  const lines = (await readFile(sinkPath, 'utf8')).split('\n').filter((line) => line.length > 0);
  const tokens = lines
    .map((line) => ScoredDataGroupSchema.parse(JSON.parse(line)))
    .flatMap((group) => group.masks)
    .reduce((total, masks) => total + masks.filter((m) => m !== MASKED).length, 0);
  return { tokens, seconds: wallMs / 1000 };
}

/** Each concurrency in rounds that alternate which side goes first, so both see the same share of other load. */
async function measure(inference: InferenceClient, workers: BenchWorkers) {
  const rows = [];
  for (const c of flags.concurrency) {
    const d: Measure[] = [];
    const t: Measure[] = [];
    for (let r = 0; r < flags.rounds; r++) {
      if (r % 2 === 0) d.push(await direct(inference, c, perRound(c), MAX_TOKENS));
      t.push(await clotho(workers, c, perRound(c)));
      if (r % 2 === 1) d.push(await direct(inference, c, perRound(c), MAX_TOKENS));
    }
    const ratios = d.map((m, r) => (rate(t[r]!) / rate(m)).toFixed(2));
    console.log(
      `c=${c}: direct ${rate(sum(d)).toFixed(1)} tok/s, clotho ${rate(sum(t)).toFixed(1)} tok/s, ratio per round ${ratios.join(' ')}`,
    );
    rows.push({ c, requests: flags.rounds * perRound(c), direct: sum(d), clotho: sum(t) });
  }
  return rows;
}

async function main(): Promise<void> {
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
  const loadBefore = load();
  const cleanup: Array<() => Promise<void>> = [];
  try {
    const engine = await startLocalEngine({ model: flags.model, port: 0, slots: SLOTS, threads: flags.threads });
    cleanup.push(() => engine.close());
    const bench = await startBenchTemporal();
    cleanup.push(() => bench.close());
    const workers = await startBenchWorkers(bench, {
      baseUrl: engine.baseUrl,
      modelName: engine.modelName,
      groupSize: 1,
      tokens: MAX_TOKENS,
      llmConcurrency: SLOTS,
      generateTimeoutS: GENERATE_TIMEOUT_S,
    });
    cleanup.push(() => workers.shutdown());
    const inference = createOpenAIClient(ServerConfigSchema.parse({ base_url: engine.baseUrl, model_name: engine.modelName }));

    // Warm-up: every slot once, and one env-run, so neither side pays first-call costs in the measurement.
    await direct(inference, SLOTS, SLOTS, 8);
    await clotho(workers, 2, 2);
    const rows = await measure(inference, workers);

    console.log(`\nmodel ${engine.modelName}, ${SLOTS} slots, requests of at most ${MAX_TOKENS} tokens in ${flags.rounds} rounds per side`);
    console.log(`load average before ${loadBefore}, after ${load()}`);
    console.log('concurrency | requests | direct tok/s (tokens, s) | clotho tok/s (tokens, s) | ratio clotho / direct');
    const cell = (m: Measure) => `${rate(m).toFixed(1)} (${m.tokens}, ${m.seconds.toFixed(1)})`.padEnd(24);
    for (const row of rows) {
      const ratio = (rate(row.clotho) / rate(row.direct)).toFixed(3);
      console.log(`${String(row.c).padEnd(11)} | ${String(row.requests).padEnd(8)} | ${cell(row.direct)} | ${cell(row.clotho)} | ${ratio}`);
    }
  } finally {
    for (const close of cleanup.reverse()) await close();
  }
}

await main();
