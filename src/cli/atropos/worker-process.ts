import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { AtroposReadySchema, type AtroposReady } from '../../schema/atropos.js';
import { atroposWorkerEnv } from './python.js';

/** How to start the Python worker of one Atropos environment. */
export interface AtroposWorkerOptions {
  python: string;
  /** `path/to/env.py[:ClassName]`. */
  spec: string;
  mode: 'serve' | 'process' | 'evaluate';
  /** Atropos's own flags, unchanged. */
  atroposArgs: string[];
  taskQueue: string;
  address: string;
  namespace: string;
  /** The run's key for signing pickled items (`ensureAtroposItemKey`). */
  itemKeyFile: string;
  /** Each line the worker prints (stdout or stderr) once it serves: what its environment prints, and its logs. */
  onOutput?: (line: string) => void;
}

export interface AtroposWorker {
  ready: AtroposReady;
  /** Settles when the worker exits, with its exit code or signal. */
  exited: Promise<number | string>;
  /** The last lines it printed (stdout and stderr), to explain an exit. */
  lastLines(): string;
  /** Asks it to finish its activities and exit (SIGTERM to its process group), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** Lines of the worker's output kept to explain an exit. */
const LINES_KEPT = 40;

/**
 * Appends `line`; once the worker serves, keeps the last LINES_KEPT only (it runs for days, printing what its
 * environment prints). Until then every line is kept: its exit before serving prints them all (Atropos's help).
 */
function keep(lines: string[], line: string, serving: boolean): void {
  lines.push(line);
  while (serving && lines.length > LINES_KEPT) lines.shift();
}

/**
 * Starts the Python worker in a process group of its own (a terminal's Ctrl-C reaches this command, which stops it in
 * order) and resolves once it polls, with the environment Atropos built (its ready line). Its stdin is a pipe it
 * watches: if this process dies, even by kill -9, the worker sees end of file and exits, so no orphan serves the
 * queue. Rejects with the end of its stderr (Atropos's own errors: a bad flag, an ambiguous class) if it exits first.
 */
export async function startAtroposWorker(options: AtroposWorkerOptions): Promise<AtroposWorker> {
  const { python, spec, mode, atroposArgs, taskQueue, address, namespace, itemKeyFile } = options;
  const args = [
    '-m',
    'clotho_atropos',
    'worker',
    '--exit-with-stdin',
    '--item-key-file',
    itemKeyFile,
    '--task-queue',
    taskQueue,
    '--address',
    address,
    '--namespace',
    namespace,
  ];
  const child = spawn(python, [...args, spec, mode, ...atroposArgs], {
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: atroposWorkerEnv(),
  });
  const stderr: string[] = [];
  let serving = false;
  const printed = (lines: string[], line: string) => {
    keep(lines, line, serving);
    if (serving) options.onOutput?.(line);
  };
  createInterface({ input: child.stderr! }).on('line', (line) => printed(stderr, line));
  // 'close', not 'exit': the last lines of its output are read by then.
  const exited = new Promise<number | string>((resolve) => child.on('close', (code, signal) => resolve(code ?? signal ?? -1)));
  const stdout: string[] = [];
  const ready = await new Promise<AtroposReady>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const event = readyEvent(line);
      if (event === undefined) return printed(stdout, line);
      const parsed = AtroposReadySchema.safeParse(event);
      serving = parsed.success;
      if (parsed.success) resolve(parsed.data);
      else reject(new Error(`the Atropos worker's ready line is not what Clotho expects: ${parsed.error.message}`));
    });
    child.on('error', reject);
    void exited.then((code) => reject(new AtroposWorkerExit(code, [...stdout, ...stderr].join('\n'))));
  });
  return {
    ready,
    exited,
    lastLines: () => [...stdout, ...stderr].join('\n'),
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalGroup(child.pid!, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The worker exited before it polled; `output` is what it printed (Atropos's help, or its error). */
export class AtroposWorkerExit extends Error {
  constructor(
    readonly code: number | string,
    readonly output: string,
  ) {
    super(`the Atropos worker exited (${code}) before it served:\n${output}`);
  }
}

/** The ready line's object; any other line (Atropos's help, an environment's prints) is undefined. */
function readyEvent(line: string): unknown {
  if (!line.startsWith('{')) return undefined;
  try {
    const value = JSON.parse(line) as { event?: unknown };
    return value.event === 'ready' ? value : undefined;
  } catch {
    return undefined;
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}
