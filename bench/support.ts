/**
 * What the benchmarks share: a Temporal dev server, an environment that does nothing but ask for a completion,
 * and env-runs of it through real workers.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { freePort, startDevServer } from '../temporal-dev/index.js';
import { defineEnvironment, type AnyEnvironment } from '../src/env/define.js';
import { loadEnvironmentData } from '../src/env/loaded.js';
import { defaultStepConfigs, toStepOptions } from '../src/config/steps.js';
import { createOpenAIClient } from '../src/inference/openai-client.js';
import { createServerManager } from '../src/inference/server-manager.js';
import { BaseEnvConfigSchema, ServerConfigSchema } from '../src/config/schemas.js';
import type { EnvRunInput } from '../src/schema/rollout.js';
import { FileSystemStore } from '../src/store/trajectory-store.js';
import { envRun } from '../src/workflows/env-run.js';
import { startWorkers } from '../src/workers/workers.js';

/** The prompt of item i, for env-runs and for the direct baselines that must send the same. */
export const benchMessages = (i: number) => [{ role: 'user', content: `item ${i}: say something` }];

/** A fixed prompt per item and a constant reward: nothing but orchestration around inference. */
export const benchEnv = defineEnvironment({
  name: 'bench',
  description: 'a fixed prompt and a constant reward: nothing but orchestration',
  config: {},
  load: async () => ({ size: 1_000_000, get: (i: number) => ({ i }) }),
  prompt: (item) => benchMessages(item.i),
  parse: (completion) => completion.length,
  score: ({ parsed }) => (parsed > 0 ? 1 : -1),
});

/** A dev server in a temporary state directory, with a client; `close` removes it all. */
export interface BenchTemporal {
  client: Client;
  address: string;
  state: string;
  /** The dev server's process id, for benchmarks that read its CPU time. */
  serverPid: number;
  /** Requests the server's frontend has answered so far in the `default` namespace, by operation (its own metrics). */
  serverRequests(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

/** Starts a headless dev server with no database file: benchmarks keep nothing. */
export async function startBenchTemporal(): Promise<BenchTemporal> {
  const state = await mkdtemp(join(tmpdir(), 'clotho-bench-'));
  const metricsPort = await freePort();
  const server = await startDevServer({ stateDir: state, port: 0, dbFilename: null, headless: true, metricsPort });
  const connection = await Connection.connect({ address: server.address });
  return {
    client: new Client({ connection }),
    address: server.address,
    state,
    serverPid: server.pid,
    serverRequests: () => frontendRequests(`http://127.0.0.1:${metricsPort}/metrics`),
    async close() {
      await connection.close();
      await server.stop();
      await rm(state, { recursive: true, force: true });
    },
  };
}

/** Options of {@link startBenchWorkers}: the inference server and the shape of every group. */
export interface BenchWorkerOptions {
  baseUrl: string;
  /** @default "default" */
  modelName?: string;
  groupSize: number;
  /** max_token_length of every group. */
  tokens: number;
  /** Concurrent generate activities. */
  llmConcurrency: number;
  /** Start-to-close timeout of one generate call, in seconds. @default 60 */
  generateTimeoutS?: number;
  /** The environment the workers serve. @default benchEnv */
  environment?: AnyEnvironment;
  /** Turns per episode at most (`max_turns`). @default 1 */
  maxTurns?: number;
  /** Where the steps run. @default "default" */
  placement?: Placement;
  /**
   * Requests the inference server takes at once (its `num_max_requests_at_once`): calls go through a server manager, as
   * in `clotho` runs, and wait for a slot past this many. @default no limit (calls go straight to the server)
   */
  requestsAtOnce?: number;
}

/** Where a bench runs a group's steps. */
export const PLACEMENTS = {
  default: 'every step local, turns in takeTurns (the default)',
  queue: 'generation and tool calls on their task queues (--steps.generate.local false --steps.tool.local false)',
  steps: 'generation and tool calls local, an activity per step (the path of runs started before takeTurns)',
} as const;
export type Placement = keyof typeof PLACEMENTS;

/** The `--placement default,queue` list of a bench, checked. */
export function placementsOf(list: string): Placement[] {
  const placements = list.split(',').filter(Boolean);
  for (const placement of placements)
    if (!(placement in PLACEMENTS))
      throw new Error(`--placement: expected default, queue and/or steps (comma-separated), got "${placement}"`);
  return placements as Placement[];
}

/** What one env-run of the bench workers did: its id (store keys and workflow ids derive from it) and wall time. */
export interface BenchRun {
  runId: string;
  /** The env-run's wall time alone, workers already started. */
  wallMs: number;
  /** The JSONL file the env-run wrote its groups to. */
  sinkPath: string;
}

/** Workers of one bench environment; each `run` is a new env-run on them. */
export interface BenchWorkers {
  /** Runs `groups` groups, `maxInFlight` at once, and checks they were all delivered. */
  run(groups: number, maxInFlight: number): Promise<BenchRun>;
  /** The trajectory store the workers write, for benchmarks that measure it. */
  store: FileSystemStore;
  shutdown(): Promise<void>;
}

let runs = 0;

/**
 * The bench's model client for the server at `baseUrl`: straight to it, or through a server manager taking
 * `requestsAtOnce` requests at once (its `num_max_requests_at_once`), as `clotho` runs send calls. `stop` ends the
 * manager's timers.
 */
export function benchInference(baseUrl: string, o: Pick<BenchWorkerOptions, 'modelName' | 'requestsAtOnce'> = {}) {
  const server = ServerConfigSchema.parse({
    base_url: baseUrl,
    model_name: o.modelName ?? 'default',
    ...(o.requestsAtOnce === undefined ? {} : { num_max_requests_at_once: o.requestsAtOnce, health_check: false }),
  });
  const manager = o.requestsAtOnce === undefined ? undefined : createServerManager({ servers: [server] });
  return { inference: manager ?? createOpenAIClient(server), stop: () => manager?.stop() };
}

/** Starts workflow, LLM and environment workers for {@link benchEnv} (or `o.environment`) on task queues of their own. */
export async function startBenchWorkers(bench: BenchTemporal, o: BenchWorkerOptions): Promise<BenchWorkers> {
  const id = `bench-${Date.now()}-${++runs}`;
  const queues = { workflows: `wf-${id}`, llm: `llm-${id}`, env: `env-${id}` };
  const definition = o.environment ?? benchEnv;
  const maxTurns = o.maxTurns ?? 1;
  const config = BaseEnvConfigSchema.parse({ group_size: o.groupSize, max_token_length: o.tokens, max_turns: maxTurns });
  const environment = await loadEnvironmentData(definition, config);
  const store = new FileSystemStore(join(bench.state, 'store'));
  const { inference, stop } = benchInference(o.baseUrl, o);
  const workers = await startWorkers({
    address: bench.address,
    namespace: 'default',
    taskQueues: queues,
    environments: { [definition.name]: environment },
    inference: () => inference,
    store,
    llmConcurrency: o.llmConcurrency,
  });
  const timeout = o.generateTimeoutS ?? 60;
  const steps = toStepOptions(defaultStepConfigs({ generate: timeout, teacher: timeout }));
  const placement = o.placement ?? 'default';
  if (placement === 'queue') {
    steps.generate.local = false;
    steps.tool.local = false;
  }
  return {
    store,
    async run(groups, maxInFlight) {
      const runId = `${id}-${++runs}`;
      const sinkPath = join(bench.state, `${runId}.jsonl`);
      const input: EnvRunInput = {
        runId,
        environment: definition.name,
        totalGroups: groups,
        maxInFlight,
        sink: { kind: 'jsonl', path: sinkPath },
        group: {
          groupSize: o.groupSize,
          maxTurns,
          maxTokenLength: o.tokens,
          sampling: { temperature: 1, topP: 1 },
          ensureScoresAreNotSame: false,
          teacherTopK: null,
          taskQueues: { llm: queues.llm, env: queues.env },
          steps,
          searchAttributes: true,
          oneActivityPerTurn: placement !== 'steps',
        },
      };
      const start = performance.now();
      const result = await bench.client.workflow.execute(envRun, { taskQueue: queues.workflows, workflowId: runId, args: [input] });
      if (result.delivered !== groups) throw new Error(`delivered ${result.delivered} of ${groups} groups: ${JSON.stringify(result)}`);
      return { runId, wallMs: performance.now() - start, sinkPath };
    },
    async shutdown() {
      await workers.shutdown();
      stop();
    },
  };
}

/** Runs `groups` groups on fresh workers (see {@link BenchWorkers.run}) and stops them. */
export async function runGroups(bench: BenchTemporal, o: BenchWorkerOptions & { groups: number; maxInFlight: number }): Promise<BenchRun> {
  const workers = await startBenchWorkers(bench, o);
  try {
    return await workers.run(o.groups, o.maxInFlight);
  } finally {
    await workers.shutdown();
  }
}

/** One line of `service_requests` per frontend operation of the default namespace: every gRPC call a client made. */
const FRONTEND_REQUEST = /^service_requests\{namespace="default",operation="(\w+)",service_name="frontend"\} (\d+)/gm;

async function frontendRequests(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(url)).text();
  return Object.fromEntries([...text.matchAll(FRONTEND_REQUEST)].map((m) => [m[1]!, Number(m[2])]));
}

/**
 * The requests the server answered between two readings, by operation, with the total; long polls count when they
 * return (a task, or empty after a minute), so they are the workers' task round trips.
 */
export function requestsBetween(
  before: Record<string, number>,
  after: Record<string, number>,
): { total: number; byOperation: Record<string, number> } {
  const byOperation: Record<string, number> = {};
  for (const [operation, n] of Object.entries(after)) {
    const delta = n - (before[operation] ?? 0);
    if (delta > 0) byOperation[operation] = delta;
  }
  return { total: Object.values(byOperation).reduce((a, b) => a + b, 0), byOperation };
}

/** `op n, …` per group, most frequent first. */
export function perGroup(byOperation: Record<string, number>, groups: number): string {
  return Object.entries(byOperation)
    .sort((a, b) => b[1] - a[1])
    .map(([op, count]) => `${op} ${(count / groups).toFixed(2)}`)
    .join(', ');
}

/** Every run of a workflow id (an env-run continues as new) with its history length, from the server's visibility. */
export async function workflowRuns(client: Client, workflowId: string): Promise<{ runId: string; events: number }[]> {
  const runs: { runId: string; events: number }[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowId = "${workflowId}"` }))
    runs.push({ runId: info.runId, events: info.historyLength });
  return runs;
}
