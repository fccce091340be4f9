import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { z } from 'zod';

/** How to start a Python worker that announces itself with one JSON ready line (`{"event": "ready", …}`). */
export interface PythonWorkerOptions<S extends z.ZodType> {
  /** The program and its arguments (the Python, or a wrapper such as bwrap that runs it). */
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  ready: S;
  /** What its messages call it: `the verifiers worker`. */
  what: string;
  /** Each line the worker prints (stdout or stderr) once it serves: what its environment prints, and its logs. */
  onOutput?: (line: string) => void;
}

export interface PythonWorker<R> {
  ready: R;
  /** The process's id (its process group's, too). */
  pid: number;
  /** Settles when the worker exits, with its exit code or signal. */
  exited: Promise<number | string>;
  /** The last lines it printed (stdout and stderr), to explain an exit. */
  lastLines(): string;
  /** Asks it to finish its activities and exit (SIGTERM to its process group), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** The worker exited before it served; `output` is what it printed (a tool's help, or its error). */
export class PythonWorkerExit extends Error {
  constructor(
    readonly what: string,
    readonly code: number | string,
    readonly output: string,
  ) {
    super(`${what} exited (${code}) before it served:\n${output}`);
  }
}

/** Lines of the worker's output kept to explain an exit once it serves (it runs for days, printing what its code prints). */
const LINES_KEPT = 40;

/**
 * Starts a Python worker in a process group of its own, stdin a pipe it watches: when the command that started it dies,
 * even by kill -9, the worker sees end of file and exits, so no orphan serves the queue. Resolves with its ready line;
 * rejects with {@link PythonWorkerExit} and everything it printed when it exits first.
 */
export async function startPythonWorker<S extends z.ZodType>(options: PythonWorkerOptions<S>): Promise<PythonWorker<z.infer<S>>> {
  const child = spawn(options.command, options.args, { detached: true, stdio: ['pipe', 'pipe', 'pipe'], env: options.env });
  const stdout: string[] = [];
  const stderr: string[] = [];
  let serving = false;
  // Until it serves every line is kept: its exit before serving prints them all (a tool's help).
  const keep = (lines: string[], line: string) => {
    lines.push(line);
    while (serving && lines.length > LINES_KEPT) lines.shift();
    if (serving) options.onOutput?.(line);
  };
  const output = () => [...stdout, ...stderr].join('\n');
  createInterface({ input: child.stderr! }).on('line', (line) => keep(stderr, line));
  // 'close', not 'exit': the last lines of its output are read by then.
  const exited = new Promise<number | string>((resolve) => child.on('close', (code, signal) => resolve(code ?? signal ?? -1)));
  const ready = await new Promise<z.infer<S>>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = readyEvent(line);
      if (event === undefined) return keep(stdout, line);
      const parsed = options.ready.safeParse(event);
      serving = parsed.success;
      if (parsed.success) resolve(parsed.data);
      else reject(new Error(`${options.what}'s ready line is not what Clotho expects: ${parsed.error.message}`));
    });
    child.on('error', reject);
    void exited.then((code) => reject(new PythonWorkerExit(options.what, code, output())));
  });
  return {
    ready,
    pid: child.pid!,
    exited,
    lastLines: output,
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalGroup(child.pid!, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The ready line's object; any other line (a tool's help, an environment's prints) is undefined. */
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
