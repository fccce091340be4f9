import { basename } from 'node:path';
import type { z } from 'zod';
import type { AnyEnvironment } from '../../env/define.js';
import { ConfigError } from '../../config/config-error.js';
import { resolveConfig } from '../../config/resolve.js';
import type { AtroposEnvRunInput, AtroposReady, AtroposRunHooks } from '../../schema/atropos.js';
import type { StepOptionsTable } from '../../schema/rollout.js';
import { openStore } from '../../store/open-store.js';
import { FileSystemStore } from '../../store/trajectory-store.js';
import { startAtroposWorkflowWorker, type RunningWorkers } from '../../workers/workers.js';
import { envRunId } from '../commands/process.js';
import { interruption } from '../interrupt.js';
import type { CommandIo } from '../io.js';
import { newRunId, RUN_FLAGS } from '../../config/resolve-run.js';
import { recordRunConfig, settleRunConfig, type RunConfigRecord } from '../../config/run-config.js';
import { openTemporal, runTaskQueues, type TemporalRuntime } from '../runtime.js';
import { refuseUnreplayable } from '../versions.js';
import { ensureAtroposPython } from './python.js';
import { METRICS_FLAGS, serveRunMetrics } from '../run-metrics.js';
import { createWorkerMetrics } from '../../workers/metrics.js';
import { AtroposWorkerExit, startAtroposWorker } from './worker-process.js';
import { AtroposWorkerGaveUp, restartPolicy, superviseAtroposWorker, WORKER_RESTARTS_FLAGS, type SupervisedWorker } from './supervisor.js';
import { resumeCommand } from '../resume-command.js';
import { releaseActivitiesOf } from './release.js';
import { atroposItemKeyPath, ensureAtroposItemKey } from './item-key.js';
import { takeOverStickyQueues } from '../sticky.js';
import { evaluationId } from '../../workflows/messages.js';

/** `--atropos path/to/env.py[:Class]`, and Clotho's own flags of the run; every other argument is Atropos's. */
export interface AtroposArgv {
  spec: string;
  clotho: string[];
  atropos: string[];
}

/**
 * Flags Clotho reads itself and Atropos never sees: where the run's data lives, its step policies, which run, the
 * batcher, /metrics, the worker's restarts, rebuilding a resumed run's JSONL.
 */
const isClothoFlag = (name: string) =>
  ['store', 'env.run_id', 'batcher-id', 'metrics-port', 'worker-restarts', ...BOOLEAN_FLAGS].includes(name) || name.startsWith('steps.');
/** Clotho's flags that stand alone (`--rebuild-output`), or take `true` or `false` after them. */
const BOOLEAN_FLAGS = ['rebuild-output'];

/** Splits a command line of `--atropos` into the environment, Clotho's flags and Atropos's (passed on unchanged). */
export function splitAtroposArgv(argv: string[]): AtroposArgv {
  const clotho: string[] = [];
  const atropos: string[] = [];
  let spec: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const name = arg.startsWith('--') ? arg.slice(2).split('=')[0]! : undefined;
    const next = argv[i + 1];
    const valued =
      name !== undefined &&
      !arg.includes('=') &&
      next !== undefined &&
      (!BOOLEAN_FLAGS.includes(name) || next === 'true' || next === 'false');
    if (name === 'atropos') spec = arg.includes('=') ? arg.slice('--atropos='.length) : argv[++i];
    else if (name !== undefined && isClothoFlag(name)) clotho.push(arg, ...(valued ? [argv[++i]!] : []));
    else atropos.push(arg);
  }
  if (!spec) throw new ConfigError(['--atropos: expected path/to/env.py[:ClassName]']);
  return { spec, clotho, atropos };
}

/** The end of `--atropos … --help`, after Atropos's own. */
export const ATROPOS_CLOTHO_FLAGS_HELP = `
Clotho's flags (taken out before Atropos's CLI reads the rest):
  --store <dir>                the trajectory store, a directory (default $CLOTHO_HOME/store)
  --env.run_id <id>            the run to resume (or, for clotho worker, to join)
  --batcher-id <id>            serve: the batcher of the clotho api to feed
  --metrics-port <n>           Prometheus metrics of this process at http://<host>:<n>/metrics
  --steps.<step>.<field> <v>   step policies (a group's collect runs under --steps.generate)
  --worker-restarts <n>        restarts of a Python worker that died, within 10 minutes, 1 s, 2 s, 4 s … (at most
                               30 s) apart; past them the command exits printing the command that resumes the run
                               (default 5; 0: exit when it dies)
  --rebuild-output             process: resuming a run, write its JSONL again from the trajectory store first`;

/** A number field of Atropos's config, or `fallback` where the class has none. */
export const numberOf = (config: Record<string, unknown>, field: string, fallback: number): number =>
  typeof config[field] === 'number' ? config[field] : fallback;

/** The run's environment name: the class named in the spec, else the file's stem (`gsm8k_server.py` → gsm8k_server). */
export function atroposEnvironmentName(spec: string): string {
  const [file, className] = spec.split(':');
  return (className || basename(file!).replace(/\.py$/, '')).replace(/[^A-Za-z0-9._-]/g, '_');
}

/**
 * Clotho's flags of an Atropos run, read by Clotho's own parser (so `--steps.*` take the same values and errors as
 * for any environment): a stand-in environment with no fields of its own, since Atropos's class owns every `--env.*`.
 */
function clothoFlags(argv: string[], commandFlags: z.ZodRawShape) {
  const standIn = { name: 'atropos', description: 'an Atropos environment', config: {} } as unknown as AnyEnvironment;
  const resolved = resolveConfig({
    argv,
    environment: standIn,
    commandFlags: { store: RUN_FLAGS.store, ...METRICS_FLAGS, ...WORKER_RESTARTS_FLAGS, ...commandFlags },
  });
  return { runId: resolved.env.run_id, flags: resolved.rest.flags as Record<string, unknown>, steps: resolved.steps };
}

/**
 * The env-run's step policies: collect under `--steps.generate`'s (the step that asks the model), heartbeating. Atropos's
 * worker_timeout is the group's deadline (`groupTimeoutSeconds`), not the collect's: past it the group is dropped.
 */
export function atroposSteps(steps: StepOptionsTable): AtroposEnvRunInput['steps'] {
  const onWorker = { local: false, heartbeatTimeoutMs: 10_000 };
  return { next: { ...steps.prepare, ...onWorker }, collect: { ...steps.generate, ...onWorker }, deliver: steps.deliver };
}

/** Atropos's worker_timeout (> 0) as the groups' deadline: dropped as `timeout` past it, as Atropos drops them. */
export function groupDeadline(config: AtroposReady['config']): Pick<AtroposEnvRunInput, 'groupTimeoutSeconds'> {
  return typeof config.worker_timeout === 'number' && config.worker_timeout > 0 ? { groupTimeoutSeconds: config.worker_timeout } : {};
}

/** What an Atropos run's command holds while it runs. */
export interface AtroposSession {
  runId: string;
  environment: string;
  /** Whether this command resumes a run (`--env.run_id`). */
  resumed: boolean;
  /** Clotho's command flags (`--batcher-id`). */
  flags: Record<string, unknown>;
  /** The `--steps.*` policies, resolved. */
  steps: StepOptionsTable;
  temporal: TemporalRuntime;
  worker: SupervisedWorker;
  workflows: RunningWorkers;
  /** The run's config, recorded from the worker's ready line. */
  record: RunConfigRecord;
  /** The env-run's input common to every sink. */
  settings: Omit<AtroposEnvRunInput, 'sink' | 'totalGroups' | 'hooks'> & { hooks: AtroposRunHooks };
  /** Rejects on Ctrl-C or SIGTERM. */
  interrupted: Promise<never>;
  /** Reject on Ctrl-C, or when either worker stops before the run ends. */
  stopped: Promise<never>[];
}

/** What a session knows before its workflow worker polls (a resumed run's JSONL is settled then). */
export type BeforeWorkflows = (
  session: Pick<AtroposSession, 'runId' | 'environment' | 'resumed' | 'flags' | 'temporal' | 'worker'> & {
    store: FileSystemStore;
  },
) => Promise<void>;

/**
 * Opens an Atropos run for `mode`: the Python worker (installing its venv first), which builds the environment as
 * Atropos's CLI would from the flags and serves its activities on the run's env queue; the run's config, recorded from
 * its ready line (an evaluation, like `clotho evaluate`, records none); `beforeWorkflows`; the workflow worker; then
 * runs `body` and closes all of it in reverse order. Atropos's `--help` and its errors about flags are printed as it
 * prints them.
 */
export async function withAtroposSession(
  argv: string[],
  mode: 'serve' | 'process' | 'worker' | 'evaluate',
  commandFlags: z.ZodRawShape,
  io: CommandIo,
  body: (session: AtroposSession) => Promise<number>,
  beforeWorkflows?: BeforeWorkflows,
): Promise<number> {
  const { spec, clotho, atropos: given } = splitAtroposArgv(argv);
  const { runId: givenRunId, flags, steps } = clothoFlags(clotho, commandFlags);
  // A worker joins a run, in the run's Atropos mode: named first, as Atropos's own CLI names it (`env.py serve …`).
  const joining = mode === 'worker';
  const [named, ...rest] = given;
  if (joining && givenRunId === null) throw new ConfigError(['--env.run_id: required, to name the run whose workers these are']);
  // An evaluation is a run of its own, as under Atropos: it neither joins nor resumes one.
  const evaluating = mode === 'evaluate';
  if (evaluating && givenRunId !== null) throw new ConfigError(['--env.run_id: clotho evaluate --atropos runs on its own; leave it out']);
  if (joining && named !== 'serve' && named !== 'process')
    throw new ConfigError(["--atropos env.py serve|process: the run's Atropos mode"]);
  const atroposMode = joining ? (named as 'serve' | 'process') : mode;
  const atropos = joining ? rest : given;
  const store = openStore(flags.store as string | undefined);
  if (!(store instanceof FileSystemStore))
    throw new ConfigError(['--store: an Atropos run writes its groups from Python, into a directory only']);
  const environment = atroposEnvironmentName(spec);
  const runId = givenRunId ?? newRunId(environment);
  const python = await ensureAtroposPython((line) => io.err(`clotho ${mode}: ${line}`));
  const temporal = await openTemporal();
  const stop = interruption();
  try {
    if (givenRunId !== null) await refuseUnreplayable(temporal.client, `run ${runId}`, envRunId(runId, environment));
    const queues = runTaskQueues(runId, environment);
    const endpoint = temporal.endpoint;
    const itemKeyFile = await ensureAtroposItemKey(atroposItemKeyPath(store.root, runId, environment), runId, joining);
    const root = evaluating ? evaluationId(runId, environment, 0) : envRunId(runId, environment);
    let worker: SupervisedWorker;
    try {
      // What the environment prints (its print(), its logging) shows beside Clotho's own lines, marked as its.
      const onOutput = (line: string) => io.err(`[env] ${line}`);
      const options = { python, spec, mode: atroposMode, atroposArgs: atropos, taskQueue: queues.env, itemKeyFile, ...endpoint, onOutput };
      worker = await superviseAtroposWorker(() => startAtroposWorker(options), {
        policy: restartPolicy(flags['worker-restarts'] as number),
        // Once a worker is gone (killed, crashed, or stopped with work left), what it had started is handed on at once.
        onExit: (exited, code) => releaseHeld(temporal, root, exited.ready.identity, code, mode, io),
        notice: (line) => io.err(`clotho ${mode}: ${line}`),
      });
    } catch (error) {
      if (!(error instanceof AtroposWorkerExit)) throw error;
      (error.code === 0 ? io.out : io.err)(error.output);
      // Atropos's help lists its flags; Clotho's own follow.
      if (error.code === 0 && atropos.some((arg) => arg === '--help' || arg === '-h')) io.out(ATROPOS_CLOTHO_FLAGS_HELP);
      return typeof error.code === 'number' ? error.code : 1;
    }
    // Past its restarts, the command exits saying how to resume the run.
    const gaveUp = worker.gaveUp.catch((error: Error) => {
      const resume = evaluating ? '' : `\nresume the run with: ${resumeCommand(mode, argv, runId)}`;
      throw new AtroposWorkerGaveUp(`${error.message}${resume}`);
    });
    gaveUp.catch(() => undefined);
    try {
      const { config } = worker.ready;
      // The worker's config, as Atropos built it, is the run's: a resumed run whose flags build another is refused.
      const settled = await settleRunConfig(store, runId, environment, config, Object.keys(config)).catch((error: unknown) => {
        if (!(error instanceof ConfigError)) throw error;
        // The worker builds its environment from this command's flags: only the run's own flags build the run's.
        const advice = "give the run's Atropos flags again (the worker builds its environment from them), or start a new run";
        throw new ConfigError([...error.problems.slice(0, -1), advice]);
      });
      if (settled.settled.how === 'new' && joining) {
        throw new ConfigError([`run ${runId} (${environment}) has no recorded config: start it with clotho process or serve --atropos`]);
      }
      if (settled.settled.how === 'new' && !evaluating) await recordRunConfig(store, runId, settled.settled.record);
      await beforeWorkflows?.({ runId, environment, resumed: givenRunId !== null, flags, temporal, worker, store });
      const workflows = await startAtroposWorkflowWorker({ ...endpoint, store, taskQueue: queues.workflows });
      try {
        // A resumed run's env-run and groups may wait on the sticky queue of a command that died: this one takes them now.
        if (givenRunId !== null && !evaluating) await takeOverStickyQueues(temporal.client, root);
        const settings = {
          runId,
          environment,
          configDigest: settled.settled.record.digest,
          maxInFlight: Math.max(1, worker.ready.maxNumWorkers),
          groupSize: typeof config.group_size === 'number' ? config.group_size : 1,
          storeRoot: store.root,
          taskQueues: { workflows: queues.workflows, atropos: queues.env },
          steps: atroposSteps(steps),
          ...groupDeadline(config),
          searchAttributes: temporal.searchAttributes,
          hooks: { usesCheckpoint: worker.ready.usesCheckpoint, minGroupsToLog: numberOf(config, 'min_items_sent_before_logging', 2) },
        };
        const stopped = [
          workflows.done.then(() => Promise.reject(new Error('the workflow worker stopped before the run finished'))),
          gaveUp,
          stop.promise,
        ];
        // They reject when the workers stop at the end of the run too, when nothing races them any more.
        for (const ending of stopped) ending.catch(() => undefined);
        const session = {
          runId,
          environment,
          resumed: givenRunId !== null,
          flags,
          steps,
          temporal,
          worker,
          workflows,
          record: settled.settled.record,
        };
        const port = flags['metrics-port'] as number | undefined;
        const metrics =
          port === undefined
            ? undefined
            : await serveRunMetrics(createWorkerMetrics(), port, environment, temporal, envRunId(runId, environment));
        try {
          return await body({ ...session, settings, interrupted: stop.promise, stopped });
        } finally {
          await metrics?.close();
        }
      } finally {
        await workflows.shutdown();
      }
    } finally {
      await worker.stop();
    }
  } finally {
    stop.dispose();
    await temporal.close();
  }
}

/** {@link releaseActivitiesOf} for a worker that exited with `code`, saying what it released; a failure only delays them. */
async function releaseHeld(temporal: TemporalRuntime, root: string, identity: string, code: number | string, mode: string, io: CommandIo) {
  try {
    const { released, errors } = await releaseActivitiesOf(temporal.client, root, identity, `exited (${code})`);
    if (released > 0)
      io.err(`clotho ${mode}: the Atropos worker exited (${code}): ${released} of its activities handed on for another attempt`);
    for (const error of errors)
      io.err(`clotho ${mode}: releasing the Atropos worker's activities: ${error} (they wait for their heartbeat timeout)`);
  } catch (error) {
    io.err(`clotho ${mode}: the Atropos worker's activities wait for their heartbeat timeout (${(error as Error).message})`);
  }
}
