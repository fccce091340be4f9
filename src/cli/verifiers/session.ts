import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { z } from 'zod';
import { serveVerifiersHost } from '../../activities/verifiers-host.js';
import { ConfigError } from '../../config/config-error.js';
import { resolveConfig } from '../../config/resolve.js';
import { newRunId, RUN_FLAGS } from '../../config/resolve-run.js';
import { recordRunConfig, settleRunConfig, type RunConfigRecord } from '../../config/run-config.js';
import type { AnyEnvironment } from '../../env/define.js';
import type { StepOptionsTable } from '../../schema/rollout.js';
import type { VerifiersEnvRunInput, VerifiersReady } from '../../schema/verifiers.js';
import { openStore } from '../../store/open-store.js';
import type { TrajectoryStore } from '../../store/trajectory-store.js';
import { createWorkerMetrics } from '../../workers/metrics.js';
import { startVerifiersWorkflowWorker, type RunningWorkers } from '../../workers/workers.js';
import { releaseActivitiesOf } from '../atropos/release.js';
import { envRunId } from '../commands/process.js';
import { interruption } from '../interrupt.js';
import type { CommandIo } from '../io.js';
import { PythonWorkerExit } from '../python-worker.js';
import { METRICS_FLAGS, serveRunMetrics } from '../run-metrics.js';
import { openTemporal, runTaskQueues, type TemporalRuntime } from '../runtime.js';
import { takeOverStickyQueues } from '../sticky.js';
import { refuseUnreplayable } from '../versions.js';
import { openVerifiersInference, type VerifiersInference } from './inference.js';
import { ensureVerifiersPython } from './python.js';
import { startVerifiersWorker, type VerifiersWorker } from './worker-process.js';

/** `--verifiers <env>`, and Clotho's own flags of the run; every other argument is verifiers'. */
export interface VerifiersArgv {
  spec: string;
  clotho: string[];
  verifiers: string[];
}

/**
 * Flags Clotho reads itself and verifiers never sees: where the run's data lives, its step policies, which run, the
 * batcher, /metrics, where `process` writes, and how the policy's server takes token ids (`--openai.*`).
 */
const CLOTHO_FLAGS = ['store', 'env.run_id', 'env.data_path_to_save_groups', 'batcher-id', 'metrics-port'];
const isClothoFlag = (name: string) => CLOTHO_FLAGS.includes(name) || name.startsWith('steps.') || name.startsWith('openai.');

/** Splits a command line of `--verifiers` into the environment, Clotho's flags and verifiers' (passed on unchanged). */
export function splitVerifiersArgv(argv: string[]): VerifiersArgv {
  const clotho: string[] = [];
  const verifiers: string[] = [];
  let spec: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const name = arg.startsWith('--') ? arg.slice(2).split('=')[0]! : undefined;
    const valued = name !== undefined && !arg.includes('=') && i + 1 < argv.length;
    if (name === 'verifiers') spec = arg.includes('=') ? arg.slice('--verifiers='.length) : argv[++i];
    else if (name !== undefined && isClothoFlag(name)) clotho.push(arg, ...(valued ? [argv[++i]!] : []));
    else verifiers.push(arg);
  }
  if (!spec) throw new ConfigError(['--verifiers: expected an environment (its id, its folder, or its module)']);
  return { spec, clotho, verifiers };
}

/** The run's environment name: a path's stem, an id's name (`owner/name@version` → name). */
export function verifiersEnvironmentName(spec: string): string {
  const name = basename(spec.replace(/\/+$/, '')).replace(/\.py$/, '').split('@')[0]!;
  return name.replace(/[^A-Za-z0-9._-]/g, '_') || 'verifiers';
}

/** Clotho's flags of a verifiers run, read by Clotho's own parser (a stand-in environment: verifiers owns `--env.*`). */
function clothoFlags(argv: string[], commandFlags: z.ZodRawShape) {
  const standIn = { name: 'verifiers', description: 'a verifiers environment', config: {} } as unknown as AnyEnvironment;
  const resolved = resolveConfig({
    argv,
    environment: standIn,
    commandFlags: { store: RUN_FLAGS.store, ...METRICS_FLAGS, ...commandFlags },
  });
  const openaiGiven = argv.flatMap((arg) => (arg.startsWith('--openai.') ? [arg.slice('--openai.'.length).split('=')[0]!] : []));
  return {
    runId: resolved.env.run_id,
    output: resolved.env.data_path_to_save_groups,
    flags: resolved.rest.flags as Record<string, unknown>,
    steps: resolved.steps,
    openai: { server: resolved.servers[0]!, given: openaiGiven },
  };
}

/** The env-run's steps: the cursor on the worker, an episode under `--steps.harness` (heartbeating), gather local. */
export function verifiersSteps(steps: StepOptionsTable): VerifiersEnvRunInput['steps'] {
  return {
    next: { ...steps.prepare, local: false },
    episode: { ...steps.harness, local: false },
    gather: steps.assemble,
    deliver: steps.deliver,
  };
}

/** The run config a verifiers run records: verifiers' config, flattened to the flags that set each field. */
export function flatConfig(value: unknown, prefix = ''): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { [prefix]: value };
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0 && prefix) return { [prefix]: value };
  return Object.assign({}, ...entries.map(([key, inner]) => flatConfig(inner, prefix ? `${prefix}.${key}` : key)));
}

/** What a verifiers run's command holds while it runs. */
export interface VerifiersSession {
  runId: string;
  environment: string;
  /** Whether this command resumes a run (`--env.run_id`). */
  resumed: boolean;
  /** `--env.data_path_to_save_groups`, when given. */
  output: string | null;
  flags: Record<string, unknown>;
  steps: StepOptionsTable;
  store: TrajectoryStore;
  temporal: TemporalRuntime;
  worker: VerifiersWorker;
  inference: VerifiersInference;
  workflows: RunningWorkers;
  record: RunConfigRecord;
  /** The env-run's input common to every sink. */
  settings: Omit<VerifiersEnvRunInput, 'sink' | 'totalGroups'>;
  interrupted: Promise<never>;
  /** Reject on Ctrl-C, or when either worker stops before the run ends. */
  stopped: Promise<never>[];
}

/**
 * Opens a verifiers run for `mode`: the session host (on a Unix socket of its own), the Python worker (installing its
 * venv first), which builds the environment with verifiers' own parser from the flags and serves its activities on the
 * run's env queue; the policy the sessions ask; the run's config, recorded from the worker's ready line (or checked
 * against the run's); the workflow worker; then runs `body` and closes all of it in reverse order. verifiers' `--help`
 * and its errors about flags are printed as it prints them (exit 2).
 */
export async function withVerifiersSession(
  argv: string[],
  mode: 'serve' | 'process' | 'worker' | 'evaluate',
  commandFlags: z.ZodRawShape,
  io: CommandIo,
  body: (session: VerifiersSession) => Promise<number>,
): Promise<number> {
  const { spec, clotho, verifiers } = splitVerifiersArgv(argv);
  const { runId: givenRunId, output, flags, steps, openai } = clothoFlags(clotho, commandFlags);
  if (mode === 'worker' && givenRunId === null) throw new ConfigError(['--env.run_id: required, to name the run whose workers these are']);
  const evaluating = mode === 'evaluate';
  if (evaluating && givenRunId !== null) throw new ConfigError(['--env.run_id: clotho evaluate --verifiers runs on its own; leave it out']);
  const store = openStore(flags.store as string | undefined);
  const environment = verifiersEnvironmentName(spec);
  const runId = givenRunId ?? newRunId(environment);
  const python = await ensureVerifiersPython((line) => io.err(`clotho ${mode}: ${line}`));
  const temporal = await openTemporal();
  const stop = interruption();
  const socketDir = await mkdtemp(join(tmpdir(), 'clotho-verifiers-'));
  let resolveInference!: (inference: VerifiersInference) => void;
  const inferenceReady = new Promise<VerifiersInference>((resolve) => (resolveInference = resolve));
  const host = await serveVerifiersHost(join(socketDir, 'host.sock'), { store, runId, environment, inference: inferenceReady });
  try {
    if (givenRunId !== null) await refuseUnreplayable(temporal.client, `run ${runId}`, envRunId(runId, environment));
    const queues = runTaskQueues(runId, environment);
    let worker: VerifiersWorker;
    try {
      worker = await startVerifiersWorker({
        python,
        spec,
        verifiersArgs: verifiers,
        taskQueue: queues.env,
        hostSocket: host.socket,
        ...temporal.endpoint,
      });
    } catch (error) {
      if (!(error instanceof PythonWorkerExit)) throw error;
      (error.code === 0 ? io.out : io.err)(error.output);
      return typeof error.code === 'number' ? error.code : 1;
    }
    // Once the worker is gone (killed, crashed, or stopped with work left), what it had started is handed on at once.
    const root = envRunId(runId, environment);
    const released = worker.exited.then((code) => releaseHeld(temporal, root, worker.ready.identity, code, mode, io));
    try {
      const inference = await openVerifiersInference(worker.ready, openai.server, openai.given);
      resolveInference(inference);
      try {
        const record = await settle(store, runId, environment, worker.ready, mode);
        const workflows = await startVerifiersWorkflowWorker({ ...temporal.endpoint, store, taskQueue: queues.workflows });
        try {
          // A resumed run's env-run and groups may wait on the sticky queue of a command that died: this one takes them now.
          if (givenRunId !== null) await takeOverStickyQueues(temporal.client, root);
          const { ready } = worker;
          const settings: VerifiersSession['settings'] = {
            runId,
            environment,
            configDigest: record.digest,
            // `-c` bounds episodes in flight, as in vf-eval: groups of `-r` episodes each.
            maxInFlight: Math.max(1, Math.floor((ready.maxConcurrent ?? 128) / ready.groupSize)),
            groupSize: ready.groupSize,
            taskQueues: { workflows: queues.workflows, verifiers: queues.env },
            steps: verifiersSteps(steps),
            generationParams: generationParams(ready),
            searchAttributes: temporal.searchAttributes,
          };
          const stopped = [
            workflows.done.then(() => Promise.reject(new Error('the workflow worker stopped before the run finished'))),
            worker.exited.then((code) =>
              Promise.reject(
                new Error(`the verifiers worker exited (${code}) before the run finished; its last lines:\n${worker.lastLines()}`),
              ),
            ),
            stop.promise,
          ];
          // They reject when the workers stop at the end of the run too, when nothing races them any more.
          for (const ending of stopped) ending.catch(() => undefined);
          const port = flags['metrics-port'] as number | undefined;
          const metrics = port === undefined ? undefined : await serveRunMetrics(createWorkerMetrics(), port, environment, temporal, root);
          try {
            return await body({
              runId,
              environment,
              resumed: givenRunId !== null,
              output,
              flags,
              steps,
              store,
              temporal,
              worker,
              inference,
              workflows,
              record,
              settings,
              interrupted: stop.promise,
              stopped,
            });
          } finally {
            await metrics?.close();
          }
        } finally {
          await workflows.shutdown();
        }
      } finally {
        await inference.close();
      }
    } finally {
      await worker.stop();
      await released;
    }
  } finally {
    await host.close();
    await rm(socketDir, { recursive: true, force: true });
    stop.dispose();
    await temporal.close();
  }
}

/**
 * The run's config, as verifiers parsed it from this command's flags: recorded by the run's first command; a later one
 * whose flags build another config is refused, naming the flags (a worker joins only a run that has one).
 */
async function settle(store: TrajectoryStore, runId: string, environment: string, ready: VerifiersReady, mode: string) {
  const config = flatConfig(ready.config);
  const settled = await settleRunConfig(store, runId, environment, config, Object.keys(config)).catch((error: unknown) => {
    if (!(error instanceof ConfigError)) throw error;
    // The fields are verifiers' flags themselves (`model`, `env.taskset.id`), not `--env.<field>`.
    const problems = error.problems.slice(0, -1).map((p) => p.replace(/^--env\./, '--'));
    throw new ConfigError([
      ...problems,
      "give the run's verifiers flags again (the worker builds its environment from them), or start a new run",
    ]);
  });
  if (settled.settled.how === 'new' && mode === 'worker') {
    throw new ConfigError([`run ${runId} (${environment}) has no recorded config: start it with clotho process or serve --verifiers`]);
  }
  if (settled.settled.how === 'new' && mode !== 'evaluate') await recordRunConfig(store, runId, settled.settled.record);
  return settled.settled.record;
}

/** The sampling a group records, in Atropos's names (`generation_params`). */
function generationParams(ready: VerifiersReady): Record<string, unknown> {
  const { temperature, top_p: topP, max_tokens: maxTokens } = ready.sampling;
  return {
    ...(temperature === undefined ? {} : { temperature }),
    ...(topP === undefined ? {} : { top_p: topP }),
    ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
  };
}

/** {@link releaseActivitiesOf} for a worker that exited with `code`, saying what it released; a failure only delays them. */
async function releaseHeld(temporal: TemporalRuntime, root: string, identity: string, code: number | string, mode: string, io: CommandIo) {
  try {
    const { released, errors } = await releaseActivitiesOf(temporal.client, root, identity, `exited (${code})`, 'the verifiers worker');
    if (released > 0)
      io.err(`clotho ${mode}: the verifiers worker exited (${code}): ${released} of its activities handed on for another attempt`);
    for (const error of errors) io.err(`clotho ${mode}: ${error} (those activities wait for their heartbeat timeout)`);
  } catch (error) {
    io.err(`clotho ${mode}: the verifiers worker's activities wait for their heartbeat timeout (${(error as Error).message})`);
  }
}
