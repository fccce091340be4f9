/**
 * Orchestration overhead of Clotho: what Temporal costs around inference.
 *
 * 1. Groups per second end to end (8 samples × 256 tokens per group) against a server that answers at once,
 *    divided by the groups per second of calling that same server directly at the same concurrency.
 * 2. With every inference call taking 2 s, the share of wall time spent outside inference.
 *
 * Run: npm run bench   (or: node --import tsx bench/orchestration/index.ts [--groups 200] [--concurrency 32])
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { startDevServer } from '../../temporal-dev/index.js';
import { defineEnvironment } from '../../src/env/define.js';
import { loadEnvironmentData } from '../../src/env/loaded.js';
import { defaultStepConfigs, toStepOptions } from '../../src/env/steps.js';
import { createOpenAIClient } from '../../src/inference/openai-client.js';
import { BaseEnvConfigSchema, ServerConfigSchema } from '../../src/schema/config.js';
import type { EnvRunInput } from '../../src/schema/rollout.js';
import { FileSystemStore } from '../../src/store/trajectory-store.js';
import { envRun } from '../../src/workflows/env-run.js';
import { startWorkers } from '../../src/workers/workers.js';
import { startScriptedOpenAI, type Responder } from '../../test/support/scripted-openai.js';

const { values } = parseArgs({
  options: { groups: { type: 'string', default: '200' }, concurrency: { type: 'string', default: '32' }, slow: { type: 'string', default: '32' } },
});
const GROUPS = Number(values.groups);
const CONCURRENCY = Number(values.concurrency);
const SLOW_GROUPS = Number(values.slow);
const SAMPLES = 8;
const TOKENS = 256;

const benchEnv = defineEnvironment({
  name: 'bench',
  description: 'a fixed prompt and a constant reward: nothing but orchestration',
  config: {},
  load: async () => ({ size: 1_000_000, get: (i: number) => ({ i }) }),
  prompt: (item) => [{ role: 'user', content: `item ${item.i}: say something` }],
  parse: (completion) => completion.length,
  score: ({ parsed }) => (parsed > 0 ? 1 : -1),
});

const answer = (delayMs: number): Responder => (body) => ({
  delayMs,
  choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({
    text: 'x',
    tokenIds: Array.from({ length: TOKENS }, (_, t) => 1000 + ((t + i) % 3000)),
    logprobs: Array.from({ length: TOKENS }, () => -0.5),
  })),
});

async function main(): Promise<void> {
  const state = await mkdtemp(join(tmpdir(), 'clotho-bench-'));
  const server = await startDevServer({ stateDir: state, port: 0, dbFilename: null, headless: true });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
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

    const clothoRate = GROUPS / ((await runGroups(client, server.address, state, fast.baseUrl, GROUPS)) / 1000);
    await fast.close();

    const slow = await startScriptedOpenAI({ responder: answer(2000) });
    const slowWallMs = await runGroups(client, server.address, state, slow.baseUrl, SLOW_GROUPS);
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
    await connection.close();
    await server.stop();
    await rm(state, { recursive: true, force: true });
  }
}

/** Runs `groups` groups of the bench environment through envRun; returns the wall time in ms. */
async function runGroups(client: Client, address: string, state: string, baseUrl: string, groups: number): Promise<number> {
  const runId = `bench-${Date.now()}`;
  const queues = { workflows: `wf-${runId}`, llm: `llm-${runId}`, env: `env-${runId}` };
  const config = BaseEnvConfigSchema.parse({ group_size: SAMPLES, max_token_length: TOKENS });
  const environment = await loadEnvironmentData(benchEnv, config);
  const inference = createOpenAIClient(ServerConfigSchema.parse({ base_url: baseUrl }));
  const workers = await startWorkers({
    address,
    namespace: 'default',
    taskQueues: queues,
    environments: { bench: environment },
    inference: () => inference,
    store: new FileSystemStore(join(state, 'store')),
    llmConcurrency: CONCURRENCY * 2,
  });
  const input: EnvRunInput = {
    runId,
    environment: 'bench',
    totalGroups: groups,
    maxInFlight: CONCURRENCY,
    sink: { kind: 'jsonl', path: join(state, `${runId}.jsonl`) },
    group: {
      groupSize: SAMPLES,
      maxTurns: 1,
      maxTokenLength: TOKENS,
      sampling: { temperature: 1, topP: 1 },
      ensureScoresAreNotSame: false,
      teacherTopK: null,
      taskQueues: { llm: queues.llm, env: queues.env },
      steps: toStepOptions(defaultStepConfigs({ generate: 60, teacher: 60 })),
      searchAttributes: true,
    },
  };
  try {
    const start = performance.now();
    const result = await client.workflow.execute(envRun, { taskQueue: queues.workflows, workflowId: runId, args: [input] });
    if (result.delivered !== groups) throw new Error(`delivered ${result.delivered} of ${groups} groups: ${JSON.stringify(result)}`);
    return performance.now() - start;
  } finally {
    await workers.shutdown();
  }
}

await main();
