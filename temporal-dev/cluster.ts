import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { clothoHome } from '../src/store/paths.js';
import { ensureClusterBinaries, TEMPORAL_SERVER_VERSION, type EnsureClusterBinariesOptions } from './cluster-binaries.js';
import {
  clusterConfig,
  clusterDynamicConfig,
  type ClusterAuthorization,
  type ClusterPorts,
  type ClusterTlsFiles,
} from './cluster-config.js';
import { clusterConnectionOptions, isClusterServing, waitUntilClusterServes } from './cluster-connect.js';
import { setupSchema } from './cluster-schema.js';
import {
  ensureRole,
  findPostgresBin,
  initPostgres,
  isInitialised,
  postgresPid,
  startPostgres,
  stopPostgres,
  type PostgresInstance,
} from './postgres.js';

/**
 * A Temporal cluster of one node on this machine: the Temporal server (built from Temporal's Go module) on a
 * PostgreSQL of its own, both in a state dir, both outliving the process that started them. Not the dev server:
 * its persistence, visibility (SQL, with SQL's limits on search attributes) and configuration are those of a
 * self-hosted production cluster, so that what runs here runs on one.
 */

const PortsSchema = z.strictObject({
  frontend: z.number().int(),
  frontendHttp: z.number().int(),
  frontendMembership: z.number().int(),
  history: z.number().int(),
  historyMembership: z.number().int(),
  matching: z.number().int(),
  matchingMembership: z.number().int(),
  worker: z.number().int(),
  workerMembership: z.number().int(),
  internalFrontend: z.number().int().optional(),
  internalFrontendHttp: z.number().int().optional(),
  internalFrontendMembership: z.number().int().optional(),
}) satisfies z.ZodType<ClusterPorts>;

const TlsSchema = z.strictObject({
  certFile: z.string(),
  keyFile: z.string(),
  caFile: z.string(),
  serverName: z.string(),
  clientCaFile: z.string().optional(),
  clientCertFile: z.string().optional(),
  clientKeyFile: z.string().optional(),
}) satisfies z.ZodType<ClusterTlsFiles>;

/** What `<stateDir>/cluster.json` records: the settings fixed at the first start, and the server while it runs. */
export const ClusterRecordSchema = z.strictObject({
  ip: z.string(),
  namespace: z.string(),
  ports: PortsSchema,
  postgres: z.strictObject({ port: z.number().int(), user: z.string(), password: z.string() }),
  tls: TlsSchema.optional(),
  authorization: z.strictObject({ jwksUrl: z.string(), adminToken: z.string() }).optional(),
  /** The server release that last ran on these databases. */
  version: z.string(),
  pid: z.number().int().positive().optional(),
  startedAt: z.string().optional(),
});
export type ClusterRecord = z.infer<typeof ClusterRecordSchema>;

export interface ClusterOptions extends Pick<EnsureClusterBinariesOptions, 'binDir' | 'env' | 'log'> {
  /** Holds cluster.json, the server's config and log, and the PostgreSQL cluster. @default '<CLOTHO_HOME>/cluster' */
  stateDir?: string;
  /** @default '127.0.0.1' */
  ip?: string;
  /** Frontend gRPC port at the first start; 0 picks a free one. Kept for later starts. @default 0 */
  port?: number;
  /** Registered at start. @default 'default' */
  namespace?: string;
  /** TLS (mutual with `clientCaFile`) of the frontend; recorded, so later starts keep it until given again. */
  tls?: ClusterTlsFiles;
  /** JWT authorization (API keys) of the frontend; recorded, so later starts keep it until given again. */
  authorization?: ClusterAuthorization;
  /** Retention of closed workflows in the namespace Clotho registers. @default 3 */
  retentionDays?: number;
  /** @default 180_000 */
  startTimeoutMs?: number;
}

/** A cluster as `startCluster` leaves it: the record, plus where its files are. */
export interface RunningCluster extends ClusterRecord {
  pid: number;
  /** `ip:port` of the frontend. */
  address: string;
  stateDir: string;
  logFile: string;
  alreadyRunning: boolean;
}

export function defaultClusterStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(clothoHome(env), 'cluster');
}

const paths = (stateDir: string) => ({
  record: join(stateDir, 'cluster.json'),
  config: join(stateDir, 'temporal-server.yaml'),
  dynamicConfig: join(stateDir, 'dynamic-config.yaml'),
  log: join(stateDir, 'temporal-server.log'),
  postgres: join(stateDir, 'postgres'),
});

export async function readClusterRecord(stateDir: string): Promise<ClusterRecord | undefined> {
  const file = paths(stateDir).record;
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (text === undefined) return undefined;
  const parsed = ClusterRecordSchema.safeParse(JSON.parse(text));
  if (!parsed.success) throw new Error(`${file} is not a Clotho cluster record: ${parsed.error.message}`);
  return parsed.data;
}

async function writeRecord(stateDir: string, record: ClusterRecord): Promise<void> {
  const file = paths(stateDir).record;
  // It holds the database password: owner only.
  await writeFile(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

function postgresOf(stateDir: string, record: ClusterRecord, binDir: string): PostgresInstance {
  return { dir: paths(stateDir).postgres, binDir, ip: record.ip, port: record.postgres.port };
}

/** Alive and really this state dir's server: a stale record must not get another process killed. */
async function isServerProcess(pid: number, stateDir: string): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
  return cmdline === undefined || cmdline.includes(paths(stateDir).config);
}

/**
 * A free port below Linux's ephemeral range (32768 and up): PostgreSQL's schema keeps membership ports in a SMALLINT
 * column (at most 32767), and a port outside the ephemeral range is not taken by some outgoing connection between
 * this pick and the server's bind, nor on a later start.
 */
async function freeLowPort(ip: string, taken: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_700);
    if (taken.has(port)) continue;
    const server = createServer();
    const free = await new Promise<boolean>((done) => {
      server.once('error', () => done(false));
      server.listen(port, ip, () => server.close(() => done(true)));
    });
    if (free) {
      taken.add(port);
      return port;
    }
  }
  throw new Error(`no free port between 20000 and 32767 on ${ip}`);
}

async function newRecord(options: ClusterOptions): Promise<ClusterRecord> {
  const ip = options.ip ?? '127.0.0.1';
  const taken = new Set<number>();
  const port = async () => freeLowPort(ip, taken);
  const ports: ClusterPorts = {
    frontend: options.port || (await port()),
    frontendHttp: await port(),
    frontendMembership: await port(),
    history: await port(),
    historyMembership: await port(),
    matching: await port(),
    matchingMembership: await port(),
    worker: await port(),
    workerMembership: await port(),
  };
  return {
    ip,
    namespace: options.namespace ?? 'default',
    ports,
    postgres: { port: await port(), user: 'temporal', password: randomBytes(18).toString('hex') },
    version: TEMPORAL_SERVER_VERSION,
  };
}

/**
 * Starts the cluster recorded in the state dir (creating it at the first start: PostgreSQL cluster, role, databases
 * and schema, then the server's config), waits until the frontend serves, registers the namespace and Clotho's
 * search attributes. If its server still runs, returns it instead.
 */
export async function startCluster(options: ClusterOptions = {}): Promise<RunningCluster> {
  const env = options.env ?? process.env;
  const stateDir = resolve(options.stateDir ?? defaultClusterStateDir(env));
  const files = paths(stateDir);
  await mkdir(stateDir, { recursive: true });
  // As root, PostgreSQL runs as `postgres`, which must be able to reach its directory inside this one.
  if (process.getuid?.() === 0) await chmod(stateDir, 0o755);
  let record = (await readClusterRecord(stateDir)) ?? (await newRecord(options));
  if (options.tls) record.tls = options.tls;
  if (options.authorization) record.authorization = options.authorization;
  if (record.authorization && record.ports.internalFrontend === undefined) {
    const taken = new Set<number>([...Object.values(record.ports), record.postgres.port]);
    record.ports = {
      ...record.ports,
      internalFrontend: await freeLowPort(record.ip, taken),
      internalFrontendHttp: await freeLowPort(record.ip, taken),
      internalFrontendMembership: await freeLowPort(record.ip, taken),
    };
  }
  if (record.pid !== undefined && (await isServerProcess(record.pid, stateDir))) {
    return {
      ...record,
      pid: record.pid,
      address: `${record.ip}:${record.ports.frontend}`,
      stateDir,
      logFile: files.log,
      alreadyRunning: true,
    };
  }
  const log = options.log ?? (() => undefined);
  const binaries = await ensureClusterBinaries({ binDir: options.binDir, env, log });

  const postgres = postgresOf(stateDir, record, await findPostgresBin(env));
  // Recorded before anything starts, so that `stopCluster` finds whatever a failed start left running.
  await writeRecord(stateDir, record);
  if (!(await isInitialised(postgres))) {
    log(`creating a PostgreSQL cluster in ${postgres.dir}`);
    await initPostgres(postgres);
  }
  await startPostgres(postgres);
  await ensureRole(postgres, record.postgres.user, record.postgres.password);
  const created = await setupSchema({
    sqlTool: binaries.sqlTool,
    postgres,
    user: record.postgres.user,
    password: record.postgres.password,
  });
  if (created.length > 0) log(`created databases ${created.join(', ')} with Temporal's schema`);
  record = { ...record, version: TEMPORAL_SERVER_VERSION };

  await writeFile(files.dynamicConfig, clusterDynamicConfig());
  const config = clusterConfig({
    ip: record.ip,
    ports: record.ports,
    postgres: { ip: record.ip, ...record.postgres },
    databases: { default: 'temporal', visibility: 'temporal_visibility' },
    dynamicConfigFile: files.dynamicConfig,
    ...(record.tls ? { tls: record.tls } : {}),
    ...(record.authorization ? { authorization: { jwksUrl: record.authorization.jwksUrl } } : {}),
  });
  await writeFile(files.config, config, { mode: 0o600 });

  const logFd = openSync(files.log, 'a');
  let child: ChildProcess;
  try {
    // The internal frontend is not among the server's default services: named, with the defaults, when configured.
    const services = record.authorization
      ? ['frontend', 'internal-frontend', 'history', 'matching', 'worker'].flatMap((name) => ['--service', name])
      : [];
    child = spawn(binaries.server, ['--config-file', files.config, '--allow-no-auth', 'start', ...services], {
      stdio: ['ignore', logFd, logFd],
      detached: true,
      env: { ...env, TEMPORAL_VERSION_CHECK_DISABLED: '1' },
    });
  } finally {
    closeSync(logFd);
  }
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
  const pid = await new Promise<number>((done, fail) => {
    child.once('spawn', () => done(child.pid!));
    child.once('error', fail);
  });
  record = { ...record, pid, startedAt: new Date().toISOString() };
  await writeRecord(stateDir, record);
  const running: RunningCluster = {
    ...record,
    pid,
    address: `${record.ip}:${record.ports.frontend}`,
    stateDir,
    logFile: files.log,
    alreadyRunning: false,
  };
  try {
    await waitUntilClusterServes(running, {
      timeoutMs: options.startTimeoutMs ?? 180_000,
      retentionDays: options.retentionDays ?? 3,
      exited: () => exited,
    });
  } catch (error) {
    if (exited === undefined) child.kill('SIGKILL');
    const tail = (await readFile(files.log, 'utf8').catch(() => '')).trim().split('\n').slice(-15).join('\n');
    throw new Error(`Temporal cluster on ${running.address} did not start: ${(error as Error).message}\nlog ${files.log}:\n${tail}`);
  }
  child.unref();
  log(
    `Temporal server ${record.version} serves ${running.address} (namespace ${record.namespace}${record.tls ? ', TLS' : ''}${record.authorization ? ', JWT authorization' : ''}), pid ${pid}`,
  );
  return running;
}

/** State of the cluster recorded in a state dir. */
export interface ClusterStatus {
  /** The recorded server process is alive. */
  running: boolean;
  /** Its frontend answers gRPC calls. */
  serving: boolean;
  /** The PostgreSQL postmaster's pid, when it runs. */
  postgresPid?: number;
  record?: ClusterRecord;
  address?: string;
}

export async function clusterStatus(options: Pick<ClusterOptions, 'stateDir' | 'env'> = {}): Promise<ClusterStatus> {
  const env = options.env ?? process.env;
  const stateDir = resolve(options.stateDir ?? defaultClusterStateDir(env));
  const record = await readClusterRecord(stateDir);
  if (record === undefined) return { running: false, serving: false };
  const address = `${record.ip}:${record.ports.frontend}`;
  const running = record.pid !== undefined && (await isServerProcess(record.pid, stateDir));
  const serving = running && (await isClusterServing(clusterConnectionOptions({ ...record, address })));
  const pgPid = await postgresPid({ dir: paths(stateDir).postgres, binDir: '', ip: record.ip, port: record.postgres.port });
  return { running, serving, record, address, ...(pgPid === undefined ? {} : { postgresPid: pgPid }) };
}

/**
 * Stops the server (SIGTERM, then SIGKILL after `timeoutMs`) and then PostgreSQL, keeping every file: the next
 * start finds its workflows where they were. Returns what it stopped.
 */
export async function stopCluster(
  options: Pick<ClusterOptions, 'stateDir' | 'env'> & { timeoutMs?: number } = {},
): Promise<{ server?: number; postgres: boolean }> {
  const env = options.env ?? process.env;
  const stateDir = resolve(options.stateDir ?? defaultClusterStateDir(env));
  const record = await readClusterRecord(stateDir);
  if (record === undefined) return { postgres: false };
  let server: number | undefined;
  if (record.pid !== undefined && (await isServerProcess(record.pid, stateDir))) {
    server = record.pid;
    process.kill(server, 'SIGTERM');
    if (!(await exitsWithin(server, stateDir, options.timeoutMs ?? 20_000))) {
      process.kill(server, 'SIGKILL');
      await exitsWithin(server, stateDir, 10_000);
    }
  }
  const { pid: _pid, startedAt: _startedAt, ...settings } = record;
  await writeRecord(stateDir, settings);
  const postgres = await stopPostgres({ ...postgresOf(stateDir, record, await findPostgresBin(env)) });
  return { ...(server === undefined ? {} : { server }), postgres };
}

/** Polls, because the server is not this process's child once started by another. */
async function exitsWithin(pid: number, stateDir: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (await isServerProcess(pid, stateDir)) {
    if (Date.now() > deadline) return false;
    await new Promise((done) => setTimeout(done, 100));
  }
  return true;
}
