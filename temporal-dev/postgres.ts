import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, chmod, chown, mkdir, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A PostgreSQL cluster of Clotho's own (Debian's `postgresql` package), in a directory of the state dir: its data,
 * its Unix socket (reachable only by its owner, so the socket trusts local connections) and its log. TCP on
 * loopback takes passwords. PostgreSQL refuses to run as root, so as root every command runs as the `postgres`
 * user (`runuser`), which then owns the directory.
 */
export interface PostgresInstance {
  /** Holds `data/`, `socket/` and `postgres.log`. */
  dir: string;
  /** Directory of `initdb`, `pg_ctl` and `postgres`. */
  binDir: string;
  ip: string;
  port: number;
}

const HOW_TO_GET_IT =
  'Clotho runs its cluster on PostgreSQL: install it (Debian/Ubuntu: `apt-get install postgresql`) or set PG_BIN to the ' +
  'directory that holds initdb and pg_ctl.';

async function isExecutable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}

/** `PG_BIN` if set, else the newest `/usr/lib/postgresql/<major>/bin` (Debian's layout), else `initdb`'s directory on PATH. */
export async function findPostgresBin(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.PG_BIN) {
    if (await isExecutable(join(env.PG_BIN, 'pg_ctl'))) return env.PG_BIN;
    throw new Error(`PG_BIN=${env.PG_BIN} holds no executable pg_ctl. ${HOW_TO_GET_IT}`);
  }
  const majors = await readdir('/usr/lib/postgresql').catch(() => [] as string[]);
  for (const major of majors.filter((m) => /^\d+$/.test(m)).sort((a, b) => Number(b) - Number(a))) {
    const dir = `/usr/lib/postgresql/${major}/bin`;
    if (await isExecutable(join(dir, 'pg_ctl'))) return dir;
  }
  for (const dir of (env.PATH ?? '').split(':')) {
    if (dir && (await isExecutable(join(dir, 'initdb'))) && (await isExecutable(join(dir, 'pg_ctl')))) return dir;
  }
  throw new Error(`no PostgreSQL found. ${HOW_TO_GET_IT}`);
}

const asRoot = () => process.getuid?.() === 0;

/** Runs a PostgreSQL program as the user that owns the cluster. */
async function pg(instance: PostgresInstance, program: string, args: string[]): Promise<string> {
  const path = join(instance.binDir, program);
  const [command, argv] = asRoot() ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
  try {
    // The program's own directory as cwd: runuser keeps root's, which the postgres user may not be allowed to enter.
    const { stdout } = await run(command, argv, { cwd: instance.binDir, maxBuffer: 16 << 20 });
    return stdout;
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${program} ${args.join(' ')} failed: ${(e.stderr || e.stdout || e.message).trim()}`);
  }
}

export const dataDir = (instance: PostgresInstance) => join(instance.dir, 'data');
export const socketDir = (instance: PostgresInstance) => join(instance.dir, 'socket');
export const postgresLog = (instance: PostgresInstance) => join(instance.dir, 'postgres.log');

/** Whether `initdb` has run in the instance's directory. */
export async function isInitialised(instance: PostgresInstance): Promise<boolean> {
  return stat(join(dataDir(instance), 'PG_VERSION')).then(
    () => true,
    () => false,
  );
}

/**
 * Creates the cluster (`initdb`): superuser `postgres`, trusted on the owner-only socket, passwords (SCRAM) over TCP.
 * As root the directory is handed to the `postgres` user, and the parent must let that user in.
 */
export async function initPostgres(instance: PostgresInstance): Promise<void> {
  await mkdir(instance.dir, { recursive: true });
  if (asRoot()) {
    const { uid, gid } = await postgresUser();
    await chown(instance.dir, uid, gid);
  }
  await chmod(instance.dir, 0o700);
  await assertReachable(instance);
  await pg(instance, 'initdb', [
    '-D',
    dataDir(instance),
    '-U',
    'postgres',
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '-E',
    'UTF8',
    '--locale=C.UTF-8',
  ]);
}

/** As root, the `postgres` user must be able to enter every directory above its own (a mkdtemp directory is 0700). */
async function assertReachable(instance: PostgresInstance): Promise<void> {
  if (!asRoot()) return;
  try {
    await run('runuser', ['-u', 'postgres', '--', 'test', '-w', instance.dir], { cwd: '/' });
  } catch {
    throw new Error(`the postgres user cannot reach ${instance.dir}: every directory above it must let others in (chmod o+x)`);
  }
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const line = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error(`running as root, and there is no postgres user to run PostgreSQL as. ${HOW_TO_GET_IT}`);
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** The postmaster's pid while it runs (from `postmaster.pid`), else undefined. */
export async function postgresPid(instance: PostgresInstance): Promise<number | undefined> {
  const text = await readFile(join(dataDir(instance), 'postmaster.pid'), 'utf8').catch(() => undefined);
  const pid = Number(text?.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

/** Starts the postmaster (a daemon: it outlives this process) and waits until it accepts connections. */
export async function startPostgres(instance: PostgresInstance): Promise<void> {
  if ((await postgresPid(instance)) !== undefined) return;
  await mkdir(socketDir(instance), { recursive: true, mode: 0o700 });
  if (asRoot()) {
    const { uid, gid } = await postgresUser();
    await chown(socketDir(instance), uid, gid);
  }
  const settings = `-p ${instance.port} -k ${socketDir(instance)} -c listen_addresses=${instance.ip}`;
  await pg(instance, 'pg_ctl', ['-D', dataDir(instance), '-o', settings, '-l', postgresLog(instance), '-w', '-t', '60', 'start']).catch(
    async (error: Error) => {
      const log = await readFile(postgresLog(instance), 'utf8').catch(() => '');
      throw new Error(`${error.message}\nlog ${postgresLog(instance)}:\n${log.trim().split('\n').slice(-8).join('\n')}`);
    },
  );
}

/** Stops the postmaster (`-m fast`: sessions are ended, nothing committed is lost); true if one was running. */
export async function stopPostgres(instance: PostgresInstance): Promise<boolean> {
  if ((await postgresPid(instance)) === undefined) return false;
  await pg(instance, 'pg_ctl', ['-D', dataDir(instance), '-m', 'fast', '-w', '-t', '60', 'stop']);
  return true;
}

/** Runs SQL as the superuser over the owner-only socket; returns unaligned, tuples-only output. */
export async function psql(instance: PostgresInstance, sql: string): Promise<string> {
  const out = await pg(instance, 'psql', [
    '-h',
    socketDir(instance),
    '-p',
    String(instance.port),
    '-U',
    'postgres',
    '-d',
    'postgres',
    '-v',
    'ON_ERROR_STOP=1',
    '-At',
    '-c',
    sql,
  ]);
  return out.trim();
}

/** Creates (or resets the password of) a login role that may create databases, for the Temporal server. */
export async function ensureRole(instance: PostgresInstance, user: string, password: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(user) || !/^[A-Za-z0-9]+$/.test(password))
    throw new Error('role names and generated passwords are plain identifiers');
  const exists = (await psql(instance, `SELECT 1 FROM pg_roles WHERE rolname = '${user}'`)) === '1';
  await psql(instance, `${exists ? 'ALTER' : 'CREATE'} ROLE ${user} WITH LOGIN CREATEDB PASSWORD '${password}'`);
}
