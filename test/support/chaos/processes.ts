import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureTemporalCli, startDevServer, type DevServer } from '../../../temporal-dev/index.js';
import { waitFor } from '../cli.js';
import { GSM8K_TEST } from '../gsm8k-model.js';
import { spawnSupervised, track, type Supervised } from './supervisor.js';
import { readTrainerLog } from './trainer-log.js';

/**
 * The processes of a chaos run, each started the way an operator starts it (the `clotho` CLI, the `temporal`
 * dev server on its SQLite file, a trainer of its own) and each restartable after a kill with the same settings.
 */

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const clothoBin = join(repoRoot, 'bin/clotho.js');
const trainerScript = fileURLToPath(new URL('./trainer.ts', import.meta.url));

/** What every process of one chaos run shares. */
export interface ChaosSetup {
  dir: string;
  dbFile: string;
  batcherId: string;
  runId: string;
  store: string;
  apiPort: number;
  modelUrl: string;
  groupSize: number;
  maxBatchesOffpolicy: number;
  numSteps: number;
  leaseSeconds: number;
  trainerLog: string;
  /** The run's environment: `gsm8k`, or the Atropos environment's name. */
  environment: string;
  /** The trainer's data: one JSON line with the `question` of each item, in the run's order. */
  itemsFile: string;
  /** Set for a run of an Atropos environment (`clotho serve --atropos`): see ./atropos.ts. */
  atropos?: AtroposRun;
}

/** How the chaos run starts its Atropos environment. */
export interface AtroposRun {
  /** `path/to/env.py[:Class]`. */
  spec: string;
  /** Atropos's flags of the run (every command of the run gives the same). */
  flags: string[];
  /** What the CLI needs to run the Python worker offline (`CLOTHO_ATROPOS_PYTHON`, no Hub). */
  env: Record<string, string>;
}

/** A dev server in a process group of its own (kill -9 takes the group), on a SQLite file that survives it. */
export interface ChaosServer {
  server: DevServer;
  address: string;
  /** SIGKILL of the server's process group; resolves once it has exited. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export async function startServer(setup: ChaosSetup, port = 0): Promise<ChaosServer> {
  const server = await startDevServer({
    cliPath: await ensureTemporalCli(),
    stateDir: setup.dir,
    dbFilename: setup.dbFile,
    logFile: join(setup.dir, 'temporal.log'),
    port,
    headless: true,
    detached: true,
    startTimeoutMs: 120_000,
  });
  const untrack = track(server.pid);
  return {
    server,
    address: server.address,
    async kill() {
      try {
        process.kill(-server.pid, 'SIGKILL');
      } catch {
        // gone already
      }
      await server.kill();
      untrack();
    },
    async stop() {
      await server.stop();
      untrack();
    },
  };
}

let incarnations: Record<string, number> = {};
const incarnation = (role: string) => (incarnations[role] = (incarnations[role] ?? 0) + 1);

function clotho(setup: ChaosSetup, role: string, address: string, args: string[]): Supervised {
  return spawnSupervised({
    name: `${role}#${incarnation(role)}`,
    command: process.execPath,
    args: [clothoBin, ...args],
    // This run's own server, whatever the caller's environment points at.
    env: { ...setup.atropos?.env, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: 'default' },
    logFile: join(setup.dir, `${role}.log`),
    cwd: repoRoot,
  });
}

/** `clotho api`, ready once it listens. */
export async function startApi(setup: ChaosSetup, address: string): Promise<{ process: Supervised; readyAt: number }> {
  const api = clotho(setup, 'api', address, [
    'api',
    '--port',
    String(setup.apiPort),
    '--batcher-id',
    setup.batcherId,
    '--store',
    setup.store,
  ]);
  return { process: api, readyAt: await api.waitForLine(/listening on/, 120_000) };
}

/** How the environment process is (re)started: the run's own command, or `clotho worker` for the same run. */
export type EnvMode = 'serve' | 'worker';

/** `clotho serve` (ready once registered, with its env id) or `clotho worker` (ready once polling), with or without `--atropos`. */
export async function startEnv(
  setup: ChaosSetup,
  address: string,
  mode: EnvMode,
): Promise<{ process: Supervised; readyAt: number; envId?: number }> {
  const { atropos } = setup;
  const common = [
    '--env.run_id',
    setup.runId,
    '--env.group_size',
    String(setup.groupSize),
    '--openai.base_url',
    setup.modelUrl,
    '--store',
    setup.store,
  ];
  // Atropos's flags are the run's config, the same on every command of the run; max_batches_offpolicy is one of them.
  const offpolicy = ['--env.max_batches_offpolicy', String(setup.maxBatchesOffpolicy)];
  // The chaos run kills the Python worker to kill its command's environment process: without restarts the command
  // exits with it, and the harness restarts the command, as it restarts every process it kills.
  const restarts = ['--worker-restarts', '0'];
  const run = atropos ? [...common, ...offpolicy, '--env.total_steps', String(setup.numSteps), ...restarts, ...atropos.flags] : common;
  const environment = atropos ? ['--atropos', atropos.spec] : ['gsm8k', '--env.data_path', GSM8K_TEST];
  if (mode === 'worker') {
    // `clotho worker --atropos env.py serve …` joins the run in its Atropos mode.
    const worker = clotho(setup, 'env', address, ['worker', ...environment, ...(atropos ? ['serve'] : []), ...run]);
    return { process: worker, readyAt: await worker.waitForLine(/workers of run .* polling/, 120_000) };
  }
  const serveFlags = ['--batcher-id', setup.batcherId, ...(atropos ? [] : offpolicy)];
  const serve = clotho(setup, 'env', address, ['serve', ...environment, ...serveFlags, ...run]);
  const readyAt = await serve.waitForLine(/registered as .*\(env_id \d+\)/, 120_000);
  const envId = Number(serve.lines.find((l) => /\(env_id \d+\)/.test(l.text))!.text.match(/\(env_id (\d+)\)/)![1]);
  return { process: serve, readyAt, envId };
}

/** The pid (and process group) of the Python worker an `--atropos` command started: its child running clotho_atropos. */
export function atroposWorkerPid(command: Supervised): number {
  const children = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(command.pid)], { encoding: 'utf8' });
  const line = children.split('\n').find((l) => l.includes('clotho_atropos'));
  if (!line) throw new Error(`${command.name} has no Python worker among its children:\n${children}`);
  return Number(line.trim().split(/\s+/)[0]);
}

/** The trainer, ready once it has registered (its log says so). */
export async function startTrainer(setup: ChaosSetup): Promise<{ process: Supervised; readyAt: number }> {
  const trainer = spawnSupervised({
    name: `trainer#${incarnation('trainer')}`,
    command: process.execPath,
    args: [
      '--import',
      'tsx',
      trainerScript,
      '--api',
      `http://127.0.0.1:${setup.apiPort}`,
      '--log',
      setup.trainerLog,
      '--lease-seconds',
      String(setup.leaseSeconds),
      '--batch-size',
      String(setup.groupSize),
      '--num-steps',
      String(setup.numSteps),
      '--data',
      setup.itemsFile,
    ],
    logFile: join(setup.dir, 'trainer.log'),
    cwd: repoRoot,
  });
  let readyAt = 0;
  await waitFor(
    () => {
      if (!trainer.alive()) throw new Error(`trainer exited before registering:\n${trainer.tail()}`);
      const registered = readTrainerLog(setup.trainerLog).events.find((e) => e.ev === 'registered' && e.pid === trainer.pid);
      readyAt = registered?.t ?? 0;
      return registered !== undefined;
    },
    120_000,
    'the trainer to register',
  );
  return { process: trainer, readyAt };
}

/** Forgets incarnation numbers (a new chaos run in the same process). */
export function resetIncarnations(): void {
  incarnations = {};
}
