import { basename } from 'node:path';
import type { AnyEnvironment } from '../../env/define.js';
import { ConfigError, resolveConfig } from '../../env/config.js';
import type { AtroposEnvRunInput, AtroposReady } from '../../schema/atropos.js';
import type { StepOptionsTable } from '../../schema/rollout.js';
import { openStore } from '../../store/open-store.js';
import { FileSystemStore } from '../../store/trajectory-store.js';
import { startAtroposWorkflowWorker } from '../../workers/workers.js';
import { envRunId, jsonlPath, reportProcessed, runToEnd } from '../commands/process.js';
import { interruption } from '../interrupt.js';
import type { CommandIo } from '../io.js';
import { newRunId, raceWatching, RUN_FLAGS } from '../run.js';
import { recordRunConfig, settleRunConfig } from '../run-config.js';
import { openTemporal, runTaskQueues } from '../runtime.js';
import { refuseUnreplayable } from '../versions.js';
import { ensureAtroposPython } from './python.js';
import { AtroposWorkerExit, startAtroposWorker } from './worker-process.js';

/** `--atropos path/to/env.py[:Class]`, and Clotho's own flags of the run; every other argument is Atropos's. */
export interface AtroposArgv {
  spec: string;
  clotho: string[];
  atropos: string[];
}

/** Flags Clotho reads itself and Atropos never sees: where the run's data lives, its step policies, which run. */
const isClothoFlag = (name: string) => name === 'store' || name === 'env.run_id' || name.startsWith('steps.');

/** Splits a command line of `--atropos` into the environment, Clotho's flags and Atropos's (passed on unchanged). */
export function splitAtroposArgv(argv: string[]): AtroposArgv {
  const clotho: string[] = [];
  const atropos: string[] = [];
  let spec: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const name = arg.startsWith('--') ? arg.slice(2).split('=')[0]! : undefined;
    const valued = name !== undefined && !arg.includes('=') && i + 1 < argv.length;
    if (name === 'atropos') spec = arg.includes('=') ? arg.slice('--atropos='.length) : argv[++i];
    else if (name !== undefined && isClothoFlag(name)) clotho.push(arg, ...(valued ? [argv[++i]!] : []));
    else atropos.push(arg);
  }
  if (!spec) throw new ConfigError(['--atropos: expected path/to/env.py[:ClassName]']);
  return { spec, clotho, atropos };
}

/** The run's environment name: the class named in the spec, else the file's stem (`gsm8k_server.py` → gsm8k_server). */
export function atroposEnvironmentName(spec: string): string {
  const [file, className] = spec.split(':');
  return (className || basename(file!).replace(/\.py$/, '')).replace(/[^A-Za-z0-9._-]/g, '_');
}

/**
 * Clotho's flags of an Atropos run, read by Clotho's own parser (so `--steps.*` take the same values and errors as
 * for any environment): a stand-in environment with no fields of its own, since Atropos's class owns every `--env.*`.
 */
function clothoFlags(argv: string[]) {
  const standIn = { name: 'atropos', description: 'an Atropos environment', config: {} } as unknown as AnyEnvironment;
  const resolved = resolveConfig({ argv, environment: standIn, commandFlags: { store: RUN_FLAGS.store } });
  return { runId: resolved.env.run_id, store: resolved.rest.flags.store, steps: resolved.steps };
}

/** The env-run's step policies: collect under `--steps.generate`'s (the step that asks the model), heartbeating. */
export function atroposSteps(steps: StepOptionsTable, config: AtroposReady['config']): AtroposEnvRunInput['steps'] {
  const workerTimeout = typeof config.worker_timeout === 'number' && config.worker_timeout > 0 ? config.worker_timeout * 1000 : undefined;
  const onWorker = { local: false, heartbeatTimeoutMs: 10_000 };
  return {
    next: { ...steps.prepare, ...onWorker },
    collect: { ...steps.generate, ...onWorker, startToCloseTimeoutMs: workerTimeout ?? steps.generate.startToCloseTimeoutMs },
    deliver: steps.deliver,
  };
}

/**
 * `clotho process --atropos env.py[:Class] <Atropos's flags>`: the Python worker builds the environment as Atropos's
 * CLI would and serves its activities; an `atroposEnvRun` workflow drives it and writes the groups to JSONL and HTML.
 */
export async function atroposProcessCommand(argv: string[], io: CommandIo): Promise<number> {
  const { spec, clotho, atropos } = splitAtroposArgv(argv);
  const flags = clothoFlags(clotho);
  const store = openStore(flags.store);
  if (!(store instanceof FileSystemStore))
    throw new ConfigError(['--store: an Atropos run writes its groups from Python, into a directory only']);
  const environment = atroposEnvironmentName(spec);
  const runId = flags.runId ?? newRunId(environment);
  const python = await ensureAtroposPython((line) => io.err(`clotho process: ${line}`));
  const temporal = await openTemporal();
  const stop = interruption();
  try {
    if (flags.runId !== null) await refuseUnreplayable(temporal.client, `run ${runId}`, envRunId(runId, environment));
    const queues = runTaskQueues(runId, environment);
    const endpoint = temporal.endpoint;
    let worker;
    try {
      worker = await startAtroposWorker({
        python,
        spec,
        mode: 'process',
        atroposArgs: atropos,
        taskQueue: queues.env,
        address: endpoint.address,
        namespace: endpoint.namespace,
      });
    } catch (error) {
      if (!(error instanceof AtroposWorkerExit)) throw error;
      // Atropos's --help, or its error about a flag or the class.
      (error.code === 0 ? io.out : io.err)(error.output);
      return typeof error.code === 'number' ? error.code : 1;
    }
    try {
      const { config } = worker.ready;
      // The worker's config, as Atropos built it, is the run's: a resumed run whose flags build another is refused.
      const settled = await settleRunConfig(store, runId, environment, config, Object.keys(config));
      if (settled.settled.how === 'new') await recordRunConfig(store, runId, settled.settled.record);
      const requested = typeof config.data_path_to_save_groups === 'string' ? config.data_path_to_save_groups : `data/${environment}.jsonl`;
      const path = jsonlPath(requested, flags.runId !== null);
      const totalGroups = typeof config.total_steps === 'number' ? config.total_steps : 0;
      if (totalGroups <= 0)
        throw new ConfigError([`--env.total_steps: expected a positive number of groups to process, got ${totalGroups}`]);
      const workflows = await startAtroposWorkflowWorker({ ...endpoint, store, taskQueue: queues.workflows });
      try {
        const input: AtroposEnvRunInput = {
          runId,
          environment,
          configDigest: settled.settled.record.digest,
          totalGroups,
          maxInFlight: Math.max(1, worker.ready.maxNumWorkers),
          sink: { kind: 'jsonl', path },
          storeRoot: store.root,
          taskQueues: { workflows: queues.workflows, atropos: queues.env },
          steps: atroposSteps(flags.steps, config),
          searchAttributes: temporal.searchAttributes,
        };
        io.out(`run ${runId}: ${totalGroups} groups of ${worker.ready.className} (Atropos) → ${path}`);
        const result = await raceWatching(
          (signal) => runToEnd(temporal, { runId, environment }, { type: 'atroposEnvRun', input }, io, signal),
          workflows.done.then(() => Promise.reject(new Error('the workflow worker stopped before the run finished'))),
          worker.exited.then((code) => Promise.reject(new Error(`the Atropos worker exited (${code}) before the run finished`))),
          stop.promise,
        );
        return await reportProcessed(result, totalGroups, path, `${environment} · ${runId}`, io);
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
