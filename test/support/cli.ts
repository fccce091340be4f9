import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../bin/clotho.js', import.meta.url));

export interface CliRun {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal's name) when the process ends. */
  exited: Promise<number | string>;
}

/** How to start the command: in `cwd` (default: this process's directory), or as a process group's leader. */
export interface SpawnOptions {
  cwd?: string;
  processGroup?: boolean;
}

/**
 * Spawns `clotho <args>` as its own process, as a user would run it; with `processGroup`, as the leader of a process
 * group of its own, as a terminal runs a command (so that `process.kill(-pid, …)` signals it as Ctrl-C does).
 */
export function spawnClotho(args: string[], env: Record<string, string> = {}, options: SpawnOptions = {}): CliRun {
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.processGroup ?? false,
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Runs `clotho <args>` to the end (in `cwd` when given). */
export async function runClotho(args: string[], env: Record<string, string> = {}, options: Pick<SpawnOptions, 'cwd'> = {}) {
  const run = spawnClotho(args, env, options);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

/** Polls `check` until it returns true, or fails after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Starts `clotho view` on a free port and resolves with its URL once it listens; `started` gets the process to stop. */
export async function startClothoView(args: string[], env: Record<string, string>, started: CliRun[]): Promise<string> {
  const run = spawnClotho(['view', ...args, '--port', '0'], env);
  started.push(run);
  let url = '';
  await waitFor(
    () => {
      url = /listening on (http:\/\/\S+\/)/.exec(run.stdout())?.[1] ?? '';
      if (run.child.exitCode !== null) throw new Error(`clotho view exited ${run.child.exitCode}: ${run.stderr()}`);
      return url !== '';
    },
    60_000,
    'clotho view to listen',
  );
  return url;
}
