import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AnyEnvironment, ModelClient } from '../../src/env/define.js';
import { loadEnvironmentData } from '../../src/env/loaded.js';
import { defaultStepConfigs, toStepOptions } from '../../src/config/steps.js';
import { createOpenAIClient } from '../../src/inference/openai-client.js';
import { BaseEnvConfigSchema, ServerConfigSchema } from '../../src/config/schemas.js';
import type { RolloutGroupInput, StepOptionsTable } from '../../src/schema/rollout.js';
import { FileSystemStore, type TrajectoryStore } from '../../src/store/trajectory-store.js';
import { startWorkers, type RunningWorkers, type WorkerSetup } from '../../src/workers/workers.js';
import type { TeacherClient } from '../../src/activities/teacher.js';
import type { InferenceClient } from '../../src/inference/types.js';
import { defaultResponder, startScriptedOpenAI, type Responder, type ScriptedOpenAI } from './scripted-openai.js';
import { testConnection, uniqueId, uniqueTaskQueue, type TestTemporal } from './temporal.js';

/** Step options for tests: the defaults, with retries that back off in milliseconds rather than seconds. */
export function fastSteps(): StepOptionsTable {
  const table = toStepOptions(defaultStepConfigs({ generate: 30, teacher: 30 }));
  for (const step of Object.values(table)) {
    step.initialIntervalMs = 20;
    step.maximumIntervalMs = 100;
  }
  return table;
}

/**
 * {@link fastSteps} with generation and tool calls on their task queues (`--steps.generate.local false
 * --steps.tool.local false`): an activity per generation and per call, each with its heartbeats and attempts.
 */
export function queuedSteps(): StepOptionsTable {
  const table = fastSteps();
  table.generate.local = false;
  table.tool.local = false;
  return table;
}

/** Counts activity calls by name; `wrap` plugs into the workers. */
export function activityCounter() {
  const calls: Record<string, number> = {};
  const wrap: NonNullable<WorkerSetup['wrapActivities']> = (activities) =>
    Object.fromEntries(
      Object.entries(activities).map(([name, fn]) => [
        name,
        (...args: never[]) => {
          calls[name] = (calls[name] ?? 0) + 1;
          return fn(...args);
        },
      ]),
    ) as typeof activities;
  return { calls, wrap };
}

export interface Harness<S extends TrajectoryStore = FileSystemStore> {
  temporal: TestTemporal;
  queues: { workflows: string; llm: string; env: string };
  store: S;
  scripted: ScriptedOpenAI;
  workers: RunningWorkers;
  runId: string;
  /** A rollout-group input for item `itemIndex` with test defaults. */
  groupInput(itemIndex: number, overrides?: Partial<RolloutGroupInput>): RolloutGroupInput;
  close(): Promise<void>;
}

/** Real workers on the suite's dev server, a scripted model over HTTP, a temporary store (or `store`). */
export async function startHarness<S extends TrajectoryStore = FileSystemStore>(options: {
  environment: AnyEnvironment;
  envConfig?: Record<string, unknown>;
  responder?: Responder;
  /** Inference other than the scripted model (the embedded engine, say). */
  inference?: InferenceClient;
  /** Token-in generation, for environments that need exact tokens (harnesses). */
  continuation?: WorkerSetup['continuation'];
  teacher?: TeacherClient;
  judge?: ModelClient;
  wrapActivities?: WorkerSetup['wrapActivities'];
  activityInterceptors?: WorkerSetup['activityInterceptors'];
  /** The trajectory store the workers use (an S3 store, say) instead of a temporary directory. */
  store?: S;
}): Promise<Harness<S>> {
  const temporal = await testConnection();
  const queues = { workflows: uniqueTaskQueue('wf'), llm: uniqueTaskQueue('llm'), env: uniqueTaskQueue('env') };
  const root = await mkdtemp(join(tmpdir(), 'clotho-store-'));
  const store = options.store ?? (new FileSystemStore(root) as TrajectoryStore as S);
  const scripted = await startScriptedOpenAI({ responder: options.responder ?? defaultResponder });
  const schema = BaseEnvConfigSchema.extend(options.environment.config);
  const config = schema.parse({ ...options.environment.defaults, ...options.envConfig }) as Parameters<typeof loadEnvironmentData>[1];
  const loaded = await loadEnvironmentData(options.environment, config);
  const client = options.inference ?? createOpenAIClient(ServerConfigSchema.parse({ base_url: scripted.baseUrl, timeout: 30 }));
  const workers = await startWorkers({
    address: temporal.address,
    namespace: temporal.namespace,
    taskQueues: queues,
    environments: { [options.environment.name]: loaded },
    inference: () => client,
    continuation: options.continuation,
    teacher: () => options.teacher,
    judge: () => options.judge,
    store,
    wrapActivities: options.wrapActivities,
    activityInterceptors: options.activityInterceptors,
  });
  const runId = uniqueId('run');
  return {
    temporal,
    queues,
    store,
    scripted,
    workers,
    runId,
    groupInput: (itemIndex, overrides = {}) => ({
      runId,
      environment: options.environment.name,
      itemIndex,
      groupSize: config.group_size,
      maxTurns: 1,
      maxTokenLength: config.max_token_length,
      sampling: { temperature: 1, topP: 1 },
      ensureScoresAreNotSame: false,
      teacherTopK: null,
      taskQueues: { llm: queues.llm, env: queues.env },
      // Each step an activity of its own, as groups ran before takeTurns: what most workflow tests look at. The
      // default placement is `{ steps: fastSteps(), oneActivityPerTurn: true }` (test/workflows/take-turns.test.ts).
      steps: queuedSteps(),
      searchAttributes: true,
      ...overrides,
    }),
    async close() {
      await workers.shutdown();
      await scripted.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}
