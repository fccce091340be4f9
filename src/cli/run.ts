import { ConfigError } from '../config/config-error.js';
import { recordRunConfig } from '../config/run-config.js';
import { resolveRun, type CommandOptions, type ResolvedRun } from '../config/resolve-run.js';
import { isMultiTurn } from '../env/define.js';
import { loadEnvironmentData, type LoadedEnvironment } from '../env/loaded.js';
import { closeMcpServers } from '../env/mcp.js';
import { reasoningOf } from '../env/thinking.js';
import { loadEnvironment } from './registry.js';
import type { EnvRunInput } from '../schema/rollout.js';
import type { WorkerMetrics } from '../workers/metrics.js';
import { startWorkers, type RunningWorkers } from '../workers/workers.js';
import { openInference, type RunInference } from './inference-setup.js';
import { interruption } from './interrupt.js';
import { startRunMetrics } from './run-metrics.js';
import { refuseUnreplayable } from './versions.js';
import { openTemporal, runTaskQueues, type TemporalRuntime } from './runtime.js';
import { takeOverStickyQueue } from './sticky.js';

/** One environment's run as the command line describes it, its config resolved once (src/config). */
export type RunPlan = ResolvedRun;

/** Resolves `<environment> [flags]` into a run plan; throws ConfigError naming every bad flag. */
export async function planRun(argv: string[], options: CommandOptions = {}): Promise<RunPlan> {
  const [name, ...rest] = argv;
  if (!name || name.startsWith('-')) throw new ConfigError(['missing <environment> (for example: gsm8k; `clotho list` names them)']);
  return resolveRun(await loadEnvironment(name), rest, options);
}

/** The env-run workflow's input for a plan (everything but the sink and the number of groups). */
export function envRunSettings(plan: RunPlan, searchAttributes: boolean): Omit<EnvRunInput, 'sink' | 'totalGroups'> {
  const { env, steps } = plan.config;
  const teacherTopK = env.teacher_enabled && env.teacher_top_k > -1 ? env.teacher_top_k : null;
  const reasoning = reasoningOf(env);
  return {
    runId: plan.runId,
    environment: plan.definition.name,
    ...(plan.runConfig ? { configDigest: plan.runConfig.record.digest } : {}),
    maxInFlight: env.max_groups_in_flight,
    // Atropos's worker_timeout: a deadline on each group (-1 or any value ≤ 0: none).
    ...(env.worker_timeout > 0 ? { groupTimeoutSeconds: env.worker_timeout } : {}),
    group: {
      groupSize: env.group_size,
      maxTurns: isMultiTurn(plan.definition) ? env.max_turns : 1,
      maxTokenLength: env.max_token_length,
      sampling: { temperature: env.temperature, topP: env.top_p, ...(reasoning ? { reasoning } : {}) },
      ensureScoresAreNotSame: env.ensure_scores_are_not_same,
      teacherTopK,
      taskQueues: runTaskQueues(plan.runId, plan.definition.name),
      steps,
      searchAttributes,
      ...(plan.definition.judge ? { judged: true } : {}),
      oneActivityPerTurn: true,
      ...(plan.definition.harness ? { harness: true } : {}),
      ...(plan.definition.setup || plan.definition.teardown
        ? { hooks: { setup: Boolean(plan.definition.setup), teardown: Boolean(plan.definition.teardown) } }
        : {}),
    },
  };
}

/** Starts the workers of a run in this process, with its environment loaded and its inference client. */
export async function startRunWorkers(
  plan: RunPlan,
  temporal: TemporalRuntime,
  inference: RunInference,
  options: Pick<Parameters<typeof startWorkers>[0], 'wrapActivities' | 'activityInterceptors'> = {},
): Promise<{ workers: RunningWorkers; environment: LoadedEnvironment }> {
  const environment = await loadEnvironmentData(plan.definition, plan.config.env);
  // The run carries this config from now on: later commands of it adopt it or are refused.
  if (plan.runConfig?.how === 'new') await recordRunConfig(plan.store, plan.runId, plan.runConfig.record);
  const workers = await startWorkers({
    address: temporal.endpoint.address,
    connection: temporal.endpoint.connection,
    namespace: temporal.endpoint.namespace,
    taskQueues: runTaskQueues(plan.runId, plan.definition.name),
    environments: { [plan.definition.name]: environment },
    inference: () => inference.policy,
    continuation: () => inference.continuation,
    teacher: () => inference.teacher,
    judge: () => inference.judge,
    store: plan.store,
    groupsInFlight: plan.config.env.max_groups_in_flight,
    ...options,
  });
  return { workers, environment };
}

/** What a rollout command holds while it runs. */
export interface RunSession {
  inference: RunInference;
  temporal: TemporalRuntime;
  workers: RunningWorkers;
  /** Rejects on Ctrl-C or SIGTERM. */
  interrupted: Promise<never>;
  /** This process's worker metrics, when --metrics-port or --env.use_wandb asked for them. */
  metrics?: WorkerMetrics;
}

/**
 * Opens a run's inference (starting the embedded engine if no server is given), its Temporal connection
 * (starting a dev server if none runs) and its workers; runs `body`; then closes all of it in reverse order (the
 * MCP servers its tools started too), also when `body` throws or the user presses Ctrl-C. `beforeWorkers` runs once
 * Temporal is open, before any of this process's workers polls.
 */
export async function withRunSession<T>(
  plan: RunPlan,
  body: (session: RunSession) => Promise<T>,
  beforeWorkers?: (temporal: TemporalRuntime) => Promise<void>,
): Promise<T> {
  const inference = await openInference(plan, plan.config.rest.flags.model);
  try {
    const temporal = await openTemporal();
    const stop = interruption();
    const envRun = `clotho/${plan.runId}/${plan.definition.name}`;
    try {
      // A run resumed (or served by more workers) must be one this code can replay: checked before any worker polls.
      if (plan.config.env.run_id !== null) await refuseUnreplayable(temporal.client, `run ${plan.runId}`, envRun);
      await beforeWorkers?.(temporal);
      const telemetry = await startRunMetrics(plan, temporal, envRun);
      try {
        const interceptors = telemetry.metrics?.interceptors;
        const { workers } = await startRunWorkers(plan, temporal, inference, { activityInterceptors: interceptors });
        try {
          // A resumed run's env-run may wait on the sticky queue of a worker that died: this process takes it now.
          if (plan.config.env.run_id !== null) await takeOverStickyQueue(temporal.client, envRun);
          return await body({ inference, temporal, workers, interrupted: stop.promise, metrics: telemetry.metrics });
        } finally {
          // The tools' MCP servers are child processes whose pipes would keep this process alive after the run.
          await workers.shutdown().finally(closeMcpServers);
        }
      } finally {
        await telemetry.close();
      }
    } finally {
      stop.dispose();
      await temporal.close();
    }
  } finally {
    await inference.close();
  }
}

/**
 * Races a watcher (of a workflow, through the Temporal connection) against whatever may end a command first:
 * Ctrl-C, dead workers. Whichever wins, the watcher's calls are aborted and it has settled before this returns,
 * so the connection can close under nothing.
 */
export async function raceWatching<T>(watch: (signal: AbortSignal) => Promise<T>, ...others: Promise<never>[]): Promise<T> {
  const abort = new AbortController();
  const watching = watch(abort.signal);
  try {
    return await Promise.race([watching, ...others]);
  } finally {
    abort.abort();
    await watching.then(
      () => undefined,
      () => undefined,
    );
  }
}
