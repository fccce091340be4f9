/**
 * The two stacks bench/atropos runs one Atropos environment on, each as its own processes: Atropos's (`run-api` and the
 * environment file's own `serve`) and Clotho's (`clotho api` and `clotho serve --atropos`, on a Temporal server).
 */
import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { processCpuMs, treeCpuMs } from '../tool-use/cpu.js';
import { startAtroposApi } from '../api/atropos.js';
import { startClothoApi, type ApiChild } from '../api/processes.js';
import type { BenchTemporal } from '../support.js';

const repoRoot = join(import.meta.dirname, '..', '..');

/** What both stacks run: the same environment file with the same Atropos flags, against the same model server. */
export interface EnvLaunch {
  python: string;
  /** The environment variables Atropos's Python needs here (offline, no wandb). */
  env: Record<string, string>;
  envFile: string;
  /** Atropos's `--env.*` and `--openai.*` flags, the same for both stacks. */
  atroposFlags: string[];
  /** A scratch directory: the processes' working directory, and Clotho's store. */
  scratch: string;
}

/** A stack serving a trainer at `url`. */
export interface Stack {
  url: string;
  /** The parts whose CPU is charged to the stack, in the order `readCpu` reads them. */
  parts: string[];
  readCpu(): number[];
  /** Starts the environment: after the trainer has registered and asked for its first batch (Atropos's rule). */
  startEnv(): void;
  /** Why the stack cannot deliver any more (its environment process exited), or undefined. */
  problem(): string | undefined;
  /** The Temporal server's requests so far by operation, where the stack has one. */
  serverRequests?: () => Promise<Record<string, number>>;
  stop(): Promise<void>;
}

/** A process whose output is kept, to explain an early exit. */
interface Kept {
  pid: number;
  problem(): string | undefined;
  stop(): Promise<void>;
}

function spawnKept(command: string, args: string[], env: Record<string, string>, cwd: string): Kept {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let spawnError: string | undefined;
  child.once('error', (error) => (spawnError = `${command} did not start: ${error.message}`));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    pid: child.pid!,
    problem: () =>
      spawnError ?? (running() ? undefined : `${command} ${args[0]} exited (${child.exitCode ?? child.signalCode}): ${output}`),
    async stop() {
      if (!running() || spawnError !== undefined) return;
      child.kill('SIGTERM');
      // A clean stop first (clotho serve stops its Python worker in order); a stuck one is killed.
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** A stack's shape once its API is up: the environment process is started later, by `startEnv`. */
function stackOf(api: ApiChild, parts: Record<string, (env: Kept | undefined) => number>, launchEnv: () => Kept): Stack {
  let env: Kept | undefined;
  return {
    url: api.url,
    parts: Object.keys(parts),
    readCpu: () => Object.values(parts).map((read) => read(env)),
    startEnv: () => void (env = launchEnv()),
    problem: () => env?.problem(),
    async stop() {
      await env?.stop();
      await api.stop();
    },
  };
}

/** Atropos as it runs today: its `run-api`, and `python env.py serve --env.rollout_server_url <run-api>`. */
export async function startAtroposStack(runApi: string, launch: EnvLaunch): Promise<Stack> {
  const api = await startAtroposApi(runApi);
  const args = [launch.envFile, 'serve', ...launch.atroposFlags, '--env.rollout_server_url', api.url];
  return stackOf(api, { 'run-api': () => treeCpuMs(api.pid), 'env.py serve': (env) => (env ? treeCpuMs(env.pid) : 0) }, () =>
    spawnKept(launch.python, args, launch.env, launch.scratch),
  );
}

/** Clotho: `clotho api` (its batcher's worker inside) and `clotho serve --atropos env.py`, on `temporal`'s server. */
export async function startClothoStack(temporal: BenchTemporal, launch: EnvLaunch): Promise<Stack> {
  const store = await mkdtemp(join(launch.scratch, 'store-'));
  const batcherId = `bench-atropos-${Date.now()}`;
  const api = await startClothoApi({ temporalAddress: temporal.address, batcherId, store });
  const args = [join(repoRoot, 'bin', 'clotho.js'), 'serve', '--atropos', launch.envFile, '--batcher-id', batcherId, '--store', store];
  const env = { ...launch.env, TEMPORAL_ADDRESS: temporal.address };
  const stack = stackOf(
    api,
    {
      'Temporal server': () => treeCpuMs(temporal.serverPid),
      'clotho api': () => treeCpuMs(api.pid),
      'clotho serve': (serve) => (serve ? processCpuMs(serve.pid) : 0),
      'its Python worker': (serve) => (serve ? treeCpuMs(serve.pid) - processCpuMs(serve.pid) : 0),
    },
    () => spawnKept(process.execPath, [...args, ...launch.atroposFlags], env, launch.scratch),
  );
  return { ...stack, serverRequests: () => temporal.serverRequests() };
}
