import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { defaultStateDir, ensureTemporalCli } from './cli.js';
import { CLOTHO_SEARCH_ATTRIBUTES, ensureSearchAttributes } from './search-attributes.js';

/** The dev server's default frontend port, as in the `temporal` CLI. */
export const DEFAULT_TEMPORAL_PORT = 7233;

export interface DevServerOptions {
  /** The `temporal` binary. @default ensureTemporalCli({ stateDir }) */
  cliPath?: string;
  /** Holds the SQLite file, the log and (when installed there) the CLI. @default defaultStateDir() */
  stateDir?: string;
  /** @default '127.0.0.1' */
  ip?: string;
  /** Frontend gRPC port; 0 picks free ports for gRPC and UI. @default 7233 */
  port?: number;
  /** @default port + 1000 */
  uiPort?: number;
  /** Run without the web UI. @default false */
  headless?: boolean;
  /** SQLite file that keeps state across restarts; `null` keeps it in memory. @default '<stateDir>/temporal.sqlite' */
  dbFilename?: string | null;
  /** @default 'default' */
  namespace?: string;
  /** Server output is appended here. @default '<stateDir>/temporal.log' */
  logFile?: string;
  /** How long to wait for the frontend to serve. @default 60_000 */
  startTimeoutMs?: number;
  /** Let the server outlive this process (own process group, not waited on). @default false */
  detached?: boolean;
  /** Serve the server's Prometheus metrics (requests by operation, persistence calls) on this port; benchmarks read them. */
  metricsPort?: number;
}

/** A dev server this process started. */
export interface DevServer {
  /** `host:port` of the gRPC frontend. */
  address: string;
  port: number;
  namespace: string;
  /** Absent when headless. */
  uiUrl?: string;
  pid: number;
  dbFilename: string | null;
  logFile: string;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves once the process has exited. */
  stop(timeoutMs?: number): Promise<void>;
  /** SIGKILL at once, as a crash would; resolves once the process has exited. */
  kill(): Promise<void>;
}

type Resolved = Required<Omit<DevServerOptions, 'uiPort' | 'stateDir' | 'metricsPort'>> & { uiPort: number; metricsPort?: number };

/** The `temporal server start-dev` arguments for resolved options. */
export function devServerArgs(
  o: Pick<Resolved, 'ip' | 'port' | 'uiPort' | 'headless' | 'dbFilename' | 'namespace' | 'metricsPort'>,
): string[] {
  const args = ['server', 'start-dev', '--ip', o.ip, '--port', String(o.port), '--namespace', o.namespace];
  if (o.headless) args.push('--headless');
  else args.push('--ui-port', String(o.uiPort));
  if (o.dbFilename !== null) args.push('--db-filename', o.dbFilename);
  if (o.metricsPort !== undefined) args.push('--metrics-port', String(o.metricsPort));
  // No calls home from tests or laptops: version checks and the UI news feed both reach the internet.
  args.push('--dynamic-config-value', 'frontend.enableServerVersionCheck=false', '--ui-disable-news-fetch');
  args.push('--log-level', 'warn');
  for (const [name, type] of Object.entries(CLOTHO_SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  return args;
}

/** Starts `temporal server start-dev` and resolves once its frontend serves the namespace. */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const stateDir = resolve(options.stateDir ?? defaultStateDir());
  const cliPath = options.cliPath ?? (await ensureTemporalCli({ stateDir }));
  const base = {
    cliPath,
    ip: options.ip ?? '127.0.0.1',
    headless: options.headless ?? false,
    dbFilename: options.dbFilename === undefined ? join(stateDir, 'temporal.sqlite') : options.dbFilename && resolve(options.dbFilename),
    namespace: options.namespace ?? 'default',
    logFile: resolve(options.logFile ?? join(stateDir, 'temporal.log')),
    startTimeoutMs: options.startTimeoutMs ?? 60_000,
    detached: options.detached ?? false,
    ...(options.metricsPort === undefined ? {} : { metricsPort: options.metricsPort }),
  };
  const requested = options.port ?? DEFAULT_TEMPORAL_PORT;
  // Free ports are found by binding port 0 and releasing it; another process may take one in between, so retry.
  for (let attempt = 1; ; attempt++) {
    const port = requested === 0 ? await freePort(base.ip) : requested;
    const uiPort = requested === 0 ? await freePort(base.ip) : (options.uiPort ?? port + 1000);
    try {
      return await launch({ ...base, port, uiPort });
    } catch (error) {
      if (requested !== 0 || attempt >= 3 || !(error instanceof ServerExitedError)) throw error;
    }
  }
}

class ServerExitedError extends Error {}

async function launch(o: Resolved): Promise<DevServer> {
  if (o.dbFilename !== null) mkdirSync(dirname(o.dbFilename), { recursive: true });
  mkdirSync(dirname(o.logFile), { recursive: true });
  const log = openSync(o.logFile, 'a');
  const logStart = fstatSync(log).size;
  let child: ChildProcess;
  try {
    // Always a process group of its own: a terminal's Ctrl-C reaches the command, which stops its workers before the
    // server (a server killed first leaves the workers printing connection errors).
    child = spawn(o.cliPath, devServerArgs(o), { stdio: ['ignore', log, log], detached: true });
  } finally {
    closeSync(log);
  }
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const spawned = new Promise<number>((done, fail) => {
    child.once('spawn', () => done(child.pid!));
    child.once('error', fail);
  });
  const pid = await spawned;
  const address = `${o.ip}:${o.port}`;
  const hasExited = () => child.exitCode !== null || child.signalCode !== null;
  const signal = async (name: NodeJS.Signals, timeoutMs: number) => {
    if (hasExited()) return;
    child.kill(name);
    const timer = new Promise<'timeout'>((done) => setTimeout(done, timeoutMs, 'timeout').unref());
    if ((await Promise.race([exited, timer])) === 'timeout') {
      child.kill('SIGKILL');
      await exited;
    }
  };
  const server: DevServer = {
    address,
    port: o.port,
    namespace: o.namespace,
    ...(o.headless ? {} : { uiUrl: `http://${o.ip}:${o.uiPort}` }),
    pid,
    dbFilename: o.dbFilename,
    logFile: o.logFile,
    stop: (timeoutMs = 10_000) => signal('SIGTERM', timeoutMs),
    kill: () => signal('SIGKILL', 10_000),
  };
  try {
    await waitUntilServing(address, o.namespace, o.startTimeoutMs, () =>
      hasExited() ? `exited with ${child.exitCode ?? child.signalCode}` : undefined,
    );
  } catch (error) {
    await server.kill();
    const output = await readFile(o.logFile).catch(() => Buffer.alloc(0));
    const tail = output.subarray(logStart).toString('utf8').trim().split('\n').slice(-10).join('\n');
    const message = `temporal dev server on ${address} did not start: ${(error as Error).message}\nlog ${o.logFile}:\n${tail}`;
    throw error instanceof ServerExitedError ? new ServerExitedError(message) : new Error(message);
  }
  if (o.detached) child.unref();
  return server;
}

/**
 * Polls until the frontend at `address` answers and `namespace` exists, and makes sure Clotho's
 * search attributes are there. `exited` reports a dead server process, which ends the wait early.
 */
export async function waitUntilServing(
  address: string,
  namespace: string,
  timeoutMs: number,
  exited: () => string | undefined = () => undefined,
): Promise<void> {
  const connection = await connectWhenServing(address, namespace, timeoutMs, exited);
  try {
    await ensureSearchAttributes(connection, namespace);
  } finally {
    await connection.close();
  }
}

async function connectWhenServing(
  address: string,
  namespace: string,
  timeoutMs: number,
  exited: () => string | undefined,
): Promise<Connection> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    const why = exited();
    if (why !== undefined) throw new ServerExitedError(`server process ${why}`);
    if (Date.now() > deadline)
      throw new Error(`not serving after ${timeoutMs} ms (${(lastError as Error | undefined)?.message ?? 'no answer'})`);
    const connection = Connection.lazy({ address, connectTimeout: 2_000 });
    try {
      await connection.ensureConnected();
      await connection.workflowService.describeNamespace({ namespace });
      return connection;
    } catch (error) {
      lastError = error;
      await connection.close();
      await new Promise((done) => setTimeout(done, 250));
    }
  }
}

/**
 * Whether a Temporal frontend answers at `address`: its WorkflowService, not just an open port or any gRPC server.
 * `ensureConnected` alone accepts UNIMPLEMENTED (for old servers), and so would take another dev server's internal
 * history or matching port, which `temporal server start-dev` picks at random, for a frontend.
 */
export async function isServerListening(address: string, timeoutMs = 2_000): Promise<boolean> {
  // `lazy` rather than `connect`: a failed `connect` keeps its channel open with no handle to close it.
  const connection = Connection.lazy({ address, connectTimeout: timeoutMs });
  try {
    await connection.ensureConnected();
    await connection.withDeadline(Date.now() + timeoutMs, () => connection.workflowService.getSystemInfo({}));
    return true;
  } catch {
    return false;
  } finally {
    await connection.close();
  }
}

/** The kernel's ephemeral port range, from which it hands out every `listen(0)` and every connection's source port. */
export async function ephemeralPorts(): Promise<{ low: number; high: number }> {
  const text = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '');
  const [low, high] = text.trim().split(/\s+/).map(Number);
  return low && high && low <= high ? { low, high } : { low: 32768, high: 60999 };
}

/** The lowest port {@link freePort} picks: above the well-known and registered services most machines run. */
const FREE_PORT_FLOOR = 10_000;

/**
 * A port that was free a moment ago on `ip`, picked at random below the kernel's ephemeral range. A port from that
 * range (what `listen(0)` returns) can be taken again before its user binds it by any outgoing connection's source
 * port or any other `listen(0)`, a dev server's internal services among them; below the range only another explicit
 * bind can. Falls back to `listen(0)` where the range leaves no room below it.
 */
export async function freePort(ip = '127.0.0.1'): Promise<number> {
  const { low } = await ephemeralPorts();
  for (let attempt = 0; low - FREE_PORT_FLOOR >= 1000 && attempt < 20; attempt++) {
    const port = FREE_PORT_FLOOR + Math.floor(Math.random() * (low - FREE_PORT_FLOOR));
    if ((await listenOnce(port, ip)) !== null) return port;
  }
  const port = await listenOnce(0, ip);
  if (port === null) throw new Error(`no free port on ${ip}`);
  return port;
}

/** Binds `port` on `ip` and lets it go: the port it bound, or null when that was refused. */
function listenOnce(port: number, ip: string): Promise<number | null> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', () => done(null));
    probe.listen(port, ip, () => {
      const address = probe.address();
      probe.close(() => done(typeof address === 'object' && address !== null ? address.port : null));
    });
  });
}
