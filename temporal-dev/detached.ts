import { readFile, rm, writeFile, rename } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { defaultStateDir } from './cli.js';
import { isServerListening, startDevServer, type DevServerOptions } from './server.js';

/** What `startDetached` records about the server it left running (`<stateDir>/temporal-server.json`). */
export const PidFileSchema = z.strictObject({
  pid: z.number().int().positive(),
  address: z.string(),
  namespace: z.string(),
  uiUrl: z.string().optional(),
  dbFilename: z.string().nullable(),
  logFile: z.string(),
  startedAt: z.string(),
});
export type PidFile = z.infer<typeof PidFileSchema>;

/** Where the pid file of a detached server lives. */
export function pidFilePath(stateDir: string = defaultStateDir()): string {
  return join(resolve(stateDir), 'temporal-server.json');
}

/** State of the detached server recorded in a state dir. */
export interface DetachedStatus {
  /** The recorded process is alive and is a `temporal` server. */
  running: boolean;
  /** Its frontend answers gRPC calls. */
  serving: boolean;
  server?: PidFile;
}

async function readPidFile(stateDir?: string): Promise<PidFile | undefined> {
  const path = pidFilePath(stateDir);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const parsed = PidFileSchema.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`${path} is not a Clotho pid file: ${parsed.error.message}`);
  return parsed.data;
}

/** Alive, and (where /proc tells) really a dev server: a stale pid file must not get another process killed. */
async function isDevServerProcess(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).includes('start-dev');
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT' || !(await hasProc());
  }
}

async function hasProc(): Promise<boolean> {
  return readFile('/proc/self/cmdline').then(
    () => true,
    () => false,
  );
}

/** Reports whether the server recorded in `stateDir` runs and serves. */
export async function status(options: { stateDir?: string } = {}): Promise<DetachedStatus> {
  const server = await readPidFile(options.stateDir);
  if (server === undefined) return { running: false, serving: false };
  const running = await isDevServerProcess(server.pid);
  return { running, serving: running && (await isServerListening(server.address)), server };
}

/**
 * Starts a dev server that outlives this process and records it in the state dir's pid file.
 * If the recorded server still runs, returns it instead of starting a second one.
 */
export async function startDetached(options: DevServerOptions = {}): Promise<PidFile & { alreadyRunning: boolean }> {
  const current = await status(options);
  if (current.running && current.server) return { ...current.server, alreadyRunning: true };
  const server = await startDevServer({ ...options, detached: true });
  const record: PidFile = {
    pid: server.pid,
    address: server.address,
    namespace: server.namespace,
    ...(server.uiUrl === undefined ? {} : { uiUrl: server.uiUrl }),
    dbFilename: server.dbFilename,
    logFile: server.logFile,
    startedAt: new Date().toISOString(),
  };
  const path = pidFilePath(options.stateDir);
  await writeFile(`${path}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  await rename(`${path}.tmp`, path);
  return { ...record, alreadyRunning: false };
}

/**
 * Stops the recorded server (SIGTERM, then SIGKILL after `timeoutMs`), waits for it to exit and
 * removes the pid file. Returns the pid it stopped, or undefined when nothing was running.
 */
export async function stopDetached(options: { stateDir?: string; timeoutMs?: number } = {}): Promise<number | undefined> {
  const server = await readPidFile(options.stateDir);
  if (server === undefined) return undefined;
  let stopped: number | undefined;
  if (await isDevServerProcess(server.pid)) {
    process.kill(server.pid, 'SIGTERM');
    if (!(await exitsWithin(server.pid, options.timeoutMs ?? 10_000))) {
      process.kill(server.pid, 'SIGKILL');
      await exitsWithin(server.pid, 10_000);
    }
    stopped = server.pid;
  }
  await rm(pidFilePath(options.stateDir), { force: true });
  return stopped;
}

/** Polls, because a process that is not our child cannot be waited on. */
async function exitsWithin(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (await isDevServerProcess(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((done) => setTimeout(done, 100));
  }
  return true;
}
