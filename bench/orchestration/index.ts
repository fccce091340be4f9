/**
 * Orchestration overhead of Clotho: what Temporal costs around inference.
 *
 * 1. Groups per second end to end (8 samples × 256 tokens per group) against a server that answers at once,
 *    divided by the groups per second of calling that same server directly at the same concurrency.
 * 2. With every inference call taking 2 s, the share of wall time spent outside inference.
 *
 * Run: npm run bench:orchestration [-- --groups 200 --concurrency 32 --slow 128]
 */
import { parseArgs } from 'node:util';
import { createOpenAIClient } from '../../src/inference/openai-client.js';
import { ServerConfigSchema } from '../../src/schema/config.js';
import { startScriptedOpenAI, type Responder } from '../../test/support/scripted-openai.js';
import { runGroups as runBenchGroups, startBenchTemporal, type BenchTemporal } from '../support.js';

const { values } = parseArgs({
  options: { groups: { type: 'string', default: '200' }, concurrency: { type: 'string', default: '32' }, slow: { type: 'string', default: '128' } },
});
const GROUPS = Number(values.groups);
const CONCURRENCY = Number(values.concurrency);
const SLOW_GROUPS = Number(values.slow);
const SAMPLES = 8;
const TOKENS = 256;

const answer = (delayMs: number): Responder => (body) => ({
  delayMs,
  choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({
    text: 'x',
    tokenIds: Array.from({ length: TOKENS }, (_, t) => 1000 + ((t + i) % 3000)),
    logprobs: Array.from({ length: TOKENS }, () => -0.5),
  })),
});

async function main(): Promise<void> {
  const bench = await startBenchTemporal();
  try {
    const fast = await startScriptedOpenAI({ responder: answer(0) });
    const inference = createOpenAIClient(ServerConfigSchema.parse({ base_url: fast.baseUrl }));
    const request = { messages: [{ role: 'user', content: 'item 0: say something' }], n: SAMPLES, maxTokens: TOKENS, temperature: 1, topP: 1 };

    // Baseline: the same calls, straight to the server, at the same concurrency.
    const directStart = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < GROUPS) await inference.generate(request);
      }),
    );
    const directRate = GROUPS / ((performance.now() - directStart) / 1000);

    const clothoRate = GROUPS / ((await runGroups(bench, fast.baseUrl, GROUPS)) / 1000);
    await fast.close();

    const slow = await startScriptedOpenAI({ responder: answer(2000) });
    const slowWallMs = await runGroups(bench, slow.baseUrl, SLOW_GROUPS);
    await slow.close();
    // Each group makes one 2 s call; with all groups in flight at once, inference alone would take 2 s per wave.
    const waves = Math.ceil(SLOW_GROUPS / CONCURRENCY);
    const outside = (slowWallMs - waves * 2000) / slowWallMs;

    console.log(`groups: ${GROUPS} × ${SAMPLES} samples × ${TOKENS} tokens, ${CONCURRENCY} groups in flight`);
    console.log(`direct inference calls:   ${directRate.toFixed(1)} groups/s`);
    console.log(`clotho end to end:        ${clothoRate.toFixed(1)} groups/s`);
    console.log(`ratio clotho / direct:    ${(clothoRate / directRate).toFixed(3)}`);
    console.log(`2 s inference, ${SLOW_GROUPS} groups: wall ${(slowWallMs / 1000).toFixed(2)} s for ${waves} × 2 s of inference`);
    console.log(`share of wall time outside inference: ${(outside * 100).toFixed(1)} %`);
  } finally {
    await bench.close();
  }
}

/** Runs `groups` groups of the bench environment through envRun; returns the wall time in ms. */
async function runGroups(bench: BenchTemporal, baseUrl: string, groups: number): Promise<number> {
  const { wallMs } = await runBenchGroups(bench, {
    baseUrl, groups, groupSize: SAMPLES, tokens: TOKENS, maxInFlight: CONCURRENCY, llmConcurrency: CONCURRENCY * 2,
  });
  return wallMs;
}

await main();
