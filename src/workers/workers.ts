import {
  DefaultLogger,
  makeTelemetryFilterString,
  NativeConnection,
  Runtime,
  Worker,
  type ActivityInterceptorsFactory,
  type LogLevel,
} from '@temporalio/worker';
import { join } from 'node:path';
import type { TemporalConnectionOptions } from '../../temporal-dev/index.js';
import { createBatcherActivities } from '../activities/batcher.js';
import { createEnvironmentActivities } from '../activities/environment.js';
import { createEvaluationActivities } from '../activities/evaluation.js';
import { createHarnessActivities } from '../activities/harness.js';
import { createInferenceActivities, type InferenceActivityDeps } from '../activities/inference.js';
import { createJudgeActivities } from '../activities/judge.js';
import { createTurnActivities } from '../activities/turn.js';
import { createTeacherActivities, type TeacherClient } from '../activities/teacher.js';
import { createToolCallActivities } from '../activities/tool-calls.js';
import { createTrajectoryActivities } from '../activities/trajectories.js';
import { createVerifiersActivities } from '../activities/verifiers.js';
import type { ModelClient } from '../env/define.js';
import type { LoadedEnvironment } from '../env/loaded.js';
import type { InferenceClient } from '../inference/types.js';
import { clothoHome } from '../store/paths.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { workflowBundle } from './bundle.js';
import { failureLog } from './failure-log.js';

export type WorkerTaskQueues = { workflows: string; llm: string; env: string };

export interface WorkerSetup {
  address: string;
  /** TLS, API key and metadata besides the address (`endpoint.connection`); @default { address } */
  connection?: TemporalConnectionOptions;
  namespace: string;
  taskQueues: WorkerTaskQueues;
  environments: Record<string, LoadedEnvironment>;
  inference: (environment: string) => InferenceClient;
  /** Token-in generation (prompts rendered here, sent as ids) for environments that have a tokenizer. */
  continuation?: InferenceActivityDeps['continuation'];
  teacher?: (environment: string) => TeacherClient | undefined;
  /** The judge model environments' rewards may call (`--judge.*`). */
  judge?: (environment: string) => ModelClient | undefined;
  store: TrajectoryStore;
  /** Concurrent inference activities (each may hold several requests). */
  llmConcurrency?: number;
  /** Concurrent environment activities (parse, score, step: CPU-bound). */
  envConcurrency?: number;
  /**
   * Rollout groups the run keeps in flight (`max_groups_in_flight`): with generation local, each holds a workflow task
   * for its whole episode, so this worker takes that many at once.
   */
  groupsInFlight?: number;
  /** Lets tests observe or perturb activities without mocking them. */
  wrapActivities?: <T extends Record<string, (...args: never[]) => Promise<unknown>>>(activities: T) => T;
  /** Activity interceptors for all three workers (local activities included): metrics (`src/workers/metrics.ts`). */
  activityInterceptors?: ActivityInterceptorsFactory[];
}

export interface RunningWorkers {
  /** Settles when all workers have stopped; rejects if one crashed. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * How long a workflow's next task waits for the worker that has it cached before any worker may take it. After a
 * kill -9 nobody polls that worker's queue, so this is time a restarted process waits for nothing (the SDK's
 * default is 10 s); a busy live worker that misses it only costs one replay elsewhere.
 */
const STICKY_SCHEDULE_TO_START = '2 seconds';

let runtimeInstalled = false;
/** Set once this process shuts its workers down: calls cut short by the shutdown are logged, not printed. */
let stopping = false;

/**
 * Worker logs at WARN unless CLOTHO_LOG_LEVEL says otherwise: progress is the CLI's job, not the SDK's. A failure's
 * entry goes whole to `<CLOTHO_HOME>/logs/worker-<time>-<pid>.log`, and each distinct failure to stderr as one line.
 */
function installRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = (process.env.CLOTHO_LOG_LEVEL?.toUpperCase() ?? 'WARN') as LogLevel;
  const fallback = new DefaultLogger(level);
  const started = new Date().toISOString().replace(/[:.]/g, '-');
  const failures = failureLog({
    file: join(clothoHome(), 'logs', `worker-${started}-${process.pid}.log`),
    print: (line) => stopping || process.stderr.write(`clotho: ${line}\n`),
  });
  const logger = new DefaultLogger(level, (entry) => {
    // One worker per task queue is the design, so "no workflows/activities registered" is expected, not news.
    if (/^No (activities|workflows) registered/.test(entry.message)) return;
    // A workflow task holds its local activities (an episode with local generation and tools runs its turns in one):
    // one that lasts more than 5 s is how those run, not a workflow thread stuck.
    if (entry.message.includes('[TMPRL1104]')) return;
    if (failures(entry)) return;
    fallback.log(entry.level, entry.message, entry.meta);
  });
  // The SDK core's own messages come through the same logger (rather than straight to stderr), so the filter sees them.
  Runtime.install({
    logger,
    telemetryOptions: { logging: { forward: {}, filter: makeTelemetryFilterString({ core: level, other: 'ERROR' }) } },
  });
}

/** Starts the workflow, LLM and environment workers of one process. */
export async function startWorkers(setup: WorkerSetup): Promise<RunningWorkers> {
  installRuntime();
  const connection = await NativeConnection.connect(setup.connection ?? { address: setup.address });
  const wrap = setup.wrapActivities ?? ((a) => a);
  const { store } = setup;
  const common = { connection, namespace: setup.namespace, interceptors: { activity: setup.activityInterceptors ?? [] } };
  // Environment-side activities run on the env queue, and in the workflow worker for steps configured local.
  const envActivities = wrap({
    ...createEnvironmentActivities({ environments: setup.environments, store, judge: setup.judge }),
    ...createToolCallActivities({ environments: setup.environments, store }),
    ...createTrajectoryActivities({ store }),
    // An agent's episodes (harness environments): on the env queue, and gathering their group local.
    ...createHarnessActivities({ environments: setup.environments, store, continuation: setup.continuation ?? (() => undefined) }),
  });
  // Model-calling steps run on the LLM queue, and in the workflow worker for a step configured local
  // (`--steps.generate.local true`).
  const inferenceDeps = { inference: setup.inference, continuation: setup.continuation, store };
  const llmSteps = wrap({
    ...createInferenceActivities(inferenceDeps),
    ...createTeacherActivities({ teacher: setup.teacher ?? (() => undefined), store }),
    ...createJudgeActivities({ environments: setup.environments, store, judge: setup.judge }),
  });
  // A whole turn in one local activity (the default placement): generation, the tool calls and the step.
  const turnActivities = wrap(createTurnActivities({ ...inferenceDeps, environments: setup.environments, judge: setup.judge }));
  const llmConcurrency = setup.llmConcurrency ?? 64;
  const envConcurrency = setup.envConcurrency ?? 64;
  const episodes = Math.max(llmConcurrency, setup.groupsInFlight ?? 0);
  const workers = await Promise.all([
    Worker.create({
      ...common,
      taskQueue: setup.taskQueues.workflows,
      workflowBundle: await workflowBundle(),
      stickyQueueScheduleToStartTimeout: STICKY_SCHEDULE_TO_START,
      // A workflow task holds its slot until its local activities finish: an episode whose turns run local holds one
      // for the episode.
      maxConcurrentWorkflowTaskExecutions: 40 + episodes,
      activities: { ...envActivities, ...llmSteps, ...turnActivities },
      maxConcurrentLocalActivityExecutions: envConcurrency + episodes,
    }),
    Worker.create({
      ...common,
      taskQueue: setup.taskQueues.llm,
      activities: {
        ...llmSteps,
        ...wrap(createEvaluationActivities({ environments: setup.environments, inference: setup.inference, judge: setup.judge })),
      },
      maxConcurrentActivityTaskExecutions: llmConcurrency,
    }),
    Worker.create({
      ...common,
      taskQueue: setup.taskQueues.env,
      activities: envActivities,
      maxConcurrentActivityTaskExecutions: envConcurrency,
    }),
  ]);
  const done = Promise.all(workers.map((w) => w.run())).then(
    () => connection.close(),
    async (error) => {
      workers.forEach((w) => w.getState() === 'RUNNING' && w.shutdown());
      await connection.close();
      throw error;
    },
  );
  return {
    done,
    async shutdown() {
      stopping = true;
      for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}

/** Where a worker of one task queue connects, and the store its activities use. */
interface OneQueueSetup {
  address: string;
  connection?: TemporalConnectionOptions;
  namespace: string;
  store: TrajectoryStore;
}

/** Starts a worker of the workflow bundle and `activities` on one task queue. */
async function startOneQueueWorker(setup: OneQueueSetup, taskQueue: string, activities: object): Promise<RunningWorkers> {
  installRuntime();
  const connection = await NativeConnection.connect(setup.connection ?? { address: setup.address });
  const worker = await Worker.create({
    connection,
    namespace: setup.namespace,
    taskQueue,
    workflowBundle: await workflowBundle(),
    stickyQueueScheduleToStartTimeout: STICKY_SCHEDULE_TO_START,
    activities,
  });
  const done = worker.run().finally(() => connection.close());
  return {
    done,
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}

/**
 * Starts the workflow worker of an Atropos run: the workflow bundle plus the trajectory activities its deliveries
 * use. The environment's activities are the Python worker's (clients/python-atropos), on a queue of their own.
 */
export function startAtroposWorkflowWorker(setup: OneQueueSetup & { taskQueue: string }): Promise<RunningWorkers> {
  return startOneQueueWorker(setup, setup.taskQueue, createTrajectoryActivities({ store: setup.store }));
}

/**
 * Starts the workflow worker of a verifiers run: the workflow bundle, the trajectory activities its deliveries use and
 * `gatherVerifiers` (its groups' local activity). The episodes are the Python worker's (clients/python-verifiers).
 */
export function startVerifiersWorkflowWorker(setup: OneQueueSetup & { taskQueue: string }): Promise<RunningWorkers> {
  const activities = { ...createTrajectoryActivities({ store: setup.store }), ...createVerifiersActivities({ store: setup.store }) };
  return startOneQueueWorker(setup, setup.taskQueue, activities);
}

/** Task queue of the batcher workflow and its state activities (the API process runs its worker). */
export const BATCHER_TASK_QUEUE = 'clotho-workflows';

/** Starts the worker of the batcher workflow: the workflow bundle plus the batcher's store activities. */
export function startBatcherWorker(
  setup: OneQueueSetup & {
    taskQueue?: string;
    /** Called with the groups of each batch a `--trainer temporal` trainer trained (retention deletes them). */
    onTrained?: (refs: string[]) => Promise<void>;
  },
): Promise<RunningWorkers> {
  const activities = createBatcherActivities({ store: setup.store, ...(setup.onTrained ? { onTrained: setup.onTrained } : {}) });
  return startOneQueueWorker(setup, setup.taskQueue ?? BATCHER_TASK_QUEUE, activities);
}
