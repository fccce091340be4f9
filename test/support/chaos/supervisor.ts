import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';

/**
 * Process supervision for the chaos test: every process runs in a process group of its own (`detached`), so a
 * crash is imitated by SIGKILL of the whole group, as the kernel's OOM killer or a lost machine would do it: no
 * signal handler runs, nothing is flushed or closed. Output goes to a log file (one per role, every incarnation
 * appended under a header) and is kept, with arrival times, for waiting on lines.
 */

/** A line of output and when it arrived (`Date.now()`). */
export interface OutputLine {
  at: number;
  text: string;
}

export interface Supervised {
  /** Role and incarnation, as in the log: `api#2`. */
  name: string;
  pid: number;
  startedAt: number;
  lines: OutputLine[];
  /** Resolves when the process has exited, with its exit code or signal name. */
  exited: Promise<number | string>;
  alive(): boolean;
  /** The last `n` lines of output. */
  tail(n?: number): string;
  /** Resolves with the arrival time of the first line matching `pattern`; rejects on exit or timeout. */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<number>;
  /** SIGKILL of the whole process group, as a crash; resolves once the process has exited. */
  kill(): Promise<void>;
  /** SIGTERM of the group (a graceful stop), SIGKILL after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<void>;
}

/** Process groups started and not yet seen to exit: killed on exit of this process, whatever ends it. */
const groups = new Set<number>();
let hooked = false;

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/** Registers a process group for clean-up when this process exits (a failed test, Ctrl-C, an uncaught error). */
export function track(pid: number): () => void {
  groups.add(pid);
  if (!hooked) {
    hooked = true;
    process.once('exit', () => {
      for (const group of groups) killGroup(group, 'SIGKILL');
    });
  }
  return () => groups.delete(pid);
}

/** SIGKILLs every process group this process started and still tracks. */
export function killAllTracked(): void {
  for (const group of groups) killGroup(group, 'SIGKILL');
}

const MAX_LINES = 5_000;

export function spawnSupervised(options: {
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
  logFile: string;
  cwd?: string;
}): Supervised {
  const startedAt = Date.now();
  appendFileSync(options.logFile, `\n===== ${options.name} started ${new Date(startedAt).toISOString()}: ${options.args.join(' ')}\n`);
  const child: ChildProcess = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${options.name}: spawn failed`);
  const untrack = track(pid);
  const lines: OutputLine[] = [];
  const waiters = new Set<() => void>();
  const partial = { stdout: '', stderr: '' };
  const take = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
    const at = Date.now();
    appendFileSync(options.logFile, chunk);
    const text = partial[stream] + chunk.toString();
    const parts = text.split('\n');
    partial[stream] = parts.pop()!;
    for (const part of parts) lines.push({ at, text: part });
    if (lines.length > MAX_LINES) lines.splice(0, lines.length - MAX_LINES);
    for (const waiter of waiters) waiter();
  };
  child.stdout!.on('data', take('stdout'));
  child.stderr!.on('data', take('stderr'));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      untrack();
      // A process of the group may outlive its leader (none should here); the group goes with it.
      killGroup(pid, 'SIGKILL');
      appendFileSync(options.logFile, `===== ${options.name} exited: ${code ?? signal}\n`);
      for (const waiter of waiters) waiter();
      resolve(code ?? signal ?? -1);
    }),
  );
  const alive = () => child.exitCode === null && child.signalCode === null;

  const waitForLine = (pattern: RegExp, timeoutMs: number) =>
    new Promise<number>((resolve, reject) => {
      const check = () => {
        const line = lines.find((l) => pattern.test(l.text));
        if (line) return done(() => resolve(line.at));
        if (!alive())
          return done(() =>
            reject(new Error(`${options.name} exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}:\n${tail(20)}`)),
          );
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`${options.name}: no line matching ${pattern} within ${timeoutMs} ms:\n${tail(20)}`))),
        timeoutMs,
      );
      const done = (settle: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        settle();
      };
      waiters.add(check);
      check();
    });

  const tail = (n = 30) => [...lines.slice(-n).map((l) => l.text), partial.stdout, partial.stderr].filter(Boolean).join('\n');

  return {
    name: options.name,
    pid,
    startedAt,
    lines,
    exited,
    alive,
    tail,
    waitForLine,
    async kill() {
      killGroup(pid, 'SIGKILL');
      await exited;
    },
    async stop(timeoutMs = 10_000) {
      if (!alive()) return;
      killGroup(pid, 'SIGTERM');
      const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
