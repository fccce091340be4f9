import { spawn } from 'node:child_process';
import { accessSync, constants, lstatSync, readlinkSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { delimiter, isAbsolute, join, normalize, posix } from 'node:path';
import { repoRoot } from '../../store/paths.js';

/**
 * Runs untrusted code (a model's program) in a bubblewrap sandbox: its own user, pid, network, IPC, UTS and cgroup
 * namespaces (no network at all, not even the host's loopback), a read-only view of /usr and nothing else of the host,
 * a size-limited tmpfs at {@link SANDBOX_DIR} as the only writable place, and resource limits set with `prlimit`
 * inside the namespaces. See `environments/code_execution/README.md` for what it guarantees and what it does not.
 */

/** Resource limits of one run; each has a default ({@link DEFAULT_SANDBOX_LIMITS}). */
export interface SandboxLimits {
  /** Wall-clock time from start to kill, sandbox setup included. @default 10_000 */
  wallTimeMs?: number;
  /** CPU seconds per process (RLIMIT_CPU): SIGXCPU at this, SIGKILL one second later. @default 10 */
  cpuSeconds?: number;
  /** Address space per process (RLIMIT_AS): allocations past it fail (Python: MemoryError). @default 1 GiB */
  memoryBytes?: number;
  /** Processes and threads of the sandbox's user in its namespace (RLIMIT_NPROC): forks past it fail. @default 32 */
  processes?: number;
  /** Bytes of stdout and stderr together; more is cut off and the run is killed. @default 1 MiB */
  outputBytes?: number;
  /** Size of the writable tmpfs at {@link SANDBOX_DIR} (the files given included). @default 64 MiB */
  diskBytes?: number;
  /** Largest file the program may write (RLIMIT_FSIZE). @default 16 MiB */
  fileBytes?: number;
  /** Open file descriptors per process (RLIMIT_NOFILE). @default 256 */
  openFiles?: number;
}

/** The limits a run gets for every field it leaves out. */
export const DEFAULT_SANDBOX_LIMITS: Readonly<Required<SandboxLimits>> = {
  wallTimeMs: 10_000,
  cpuSeconds: 10,
  memoryBytes: 1 << 30,
  processes: 32,
  outputBytes: 1 << 20,
  diskBytes: 64 << 20,
  fileBytes: 16 << 20,
  openFiles: 256,
};

/** The program's working directory inside the sandbox (a tmpfs), also `HOME` and `TMPDIR`. */
export const SANDBOX_DIR = '/sandbox';

/** `PATH` inside the sandbox. */
export const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin';

/** The script that installs bubblewrap (`node scripts/ensure-sandbox.mjs`). */
export const ENSURE_SANDBOX_SCRIPT = join(repoRoot, 'scripts/ensure-sandbox.mjs');

/** One program run by {@link runSandboxed}: the command, its files, limits and stdin. */
export interface SandboxOptions {
  /** Program and arguments; a bare name is looked up in {@link SANDBOX_PATH}, a relative path in {@link SANDBOX_DIR}. */
  command: string[];
  /** Files to create in {@link SANDBOX_DIR}, by relative path (folders are made as needed). */
  files?: Record<string, string | Uint8Array>;
  limits?: SandboxLimits;
  /** Aborts the run: the sandbox is killed and the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Written to the program's stdin; without it stdin is empty. */
  stdin?: string;
  /** Environment variables beside `PATH`, `HOME`, `TMPDIR` and `LANG` (nothing of the host's is passed). */
  env?: Record<string, string>;
  /** Host folders to show read-only at the same path (a Python installed outside /usr, say). */
  readOnlyBinds?: string[];
  /**
   * Host folders the program may write, each shown at a path of its own inside {@link SANDBOX_DIR} (an agent's
   * workspace, which outlives the run so that a check can read it). As root, the folder must be writable by nobody.
   */
  writableBinds?: { host: string; path: string }[];
  /** The program's working directory: {@link SANDBOX_DIR} or a folder in it (a writable bind's path). @default SANDBOX_DIR */
  cwd?: string;
}

/** How a run ended when it did not exit by itself: Clotho's wall-time or output limit, or a signal (`SIGXCPU`: the CPU limit). */
export type SandboxKill = 'wall_time' | 'output' | NodeJS.Signals;

/** How a sandboxed run ended and what it printed. */
export interface SandboxResult {
  /** The program's exit status; 128 + n when signal n ended it (as a shell reports it); null when Clotho killed it. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** It ran past its wall time or its CPU time. */
  timedOut: boolean;
  killedBy: SandboxKill | null;
  /** Output went past `outputBytes` and was cut there. */
  outputTruncated: boolean;
  durationMs: number;
}

/** A folder of the host, and how it appears in the sandbox: bound read-only, or a symlink as on merged-/usr systems. */
type RootEntry = { path: string; symlink?: string };

// The system folders a program needs to start: /usr, plus /bin, /lib… as the host has them (folders or symlinks).
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
// Read by the dynamic loader and by `update-alternatives` symlinks; nothing in /etc names the host or its users.
const ETC_FILES = ['/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/alternatives', '/etc/localtime'];
// When Clotho runs as root the sandbox runs as nobody: as root bwrap would keep capabilities inside its namespaces, and
// root is exempt from RLIMIT_NPROC.
const NOBODY = 65534;

let systemDirs: RootEntry[] | undefined;
function rootEntries(): RootEntry[] {
  systemDirs ??= SYSTEM_DIRS.flatMap((path) => {
    try {
      return [lstatSync(path).isSymbolicLink() ? { path, symlink: readlinkSync(path) } : { path }];
    } catch {
      return [];
    }
  });
  return systemDirs;
}

/** The first executable `name` in a PATH-like list of folders, or null. */
export function findExecutable(name: string, searchPath: string): string | null {
  for (const dir of searchPath.split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not in this folder
    }
  }
  return null;
}

/** bwrap's path on the host, after checking that the sandbox has the two tools it runs before the program. */
function bwrapPath(): string {
  const found = findExecutable('bwrap', process.env.PATH ?? '');
  if (!found) {
    throw new Error(
      `sandbox: bubblewrap (bwrap) is not installed; run \`node ${ENSURE_SANDBOX_SCRIPT}\` (as root it installs the Debian package) ` +
        'or `apt-get install bubblewrap`',
    );
  }
  for (const tool of ['sh', 'prlimit']) {
    if (!findExecutable(tool, SANDBOX_PATH))
      throw new Error(`sandbox: ${tool} is not in ${SANDBOX_PATH} (prlimit: apt-get install util-linux)`);
  }
  return found;
}

/** Checks the command exists in the sandbox before starting one: a missing interpreter is a setup error, not the program's failure. */
function checkCommand(program: string, files: Record<string, unknown>, binds: string[]): void {
  if (!program.includes('/')) {
    if (findExecutable(program, SANDBOX_PATH)) return;
    throw new Error(`sandbox: "${program}" is not installed in the sandbox's PATH (${SANDBOX_PATH})`);
  }
  if (!isAbsolute(program) || program.startsWith(`${SANDBOX_DIR}/`)) {
    const relative = posix.relative(SANDBOX_DIR, posix.resolve(SANDBOX_DIR, program));
    if (relative in files) return;
    throw new Error(`sandbox: "${program}" is not among the files given`);
  }
  const roots = [...rootEntries().map((e) => e.path), ...binds];
  if (!roots.some((root) => program === root || program.startsWith(`${root}/`))) {
    throw new Error(
      `sandbox: "${program}" is outside the folders the sandbox shows (${roots.join(', ')}); add its folder to readOnlyBinds`,
    );
  }
  try {
    accessSync(program, constants.X_OK);
  } catch {
    throw new Error(`sandbox: "${program}" is not an executable file`);
  }
}

/** A relative path inside the work folder, or an error: the files are the caller's, but a typo must not escape. */
function workPath(name: string): string {
  const clean = posix.normalize(name);
  if (isAbsolute(clean) || clean === '.' || clean.startsWith('../') || clean === '..')
    throw new Error(`sandbox: file "${name}" must be a relative path inside the work folder`);
  return clean;
}

/** A path inside {@link SANDBOX_DIR} (absolute, or relative to it), or an error: binds and the working folder live there. */
function sandboxPath(path: string): string {
  const resolved = posix.resolve(SANDBOX_DIR, path);
  if (resolved !== SANDBOX_DIR && !resolved.startsWith(`${SANDBOX_DIR}/`))
    throw new Error(`sandbox: "${path}" must be inside ${SANDBOX_DIR}`);
  return resolved;
}

/** Folders the files need, parents first (`--dir` makes no intermediate folders). */
function foldersOf(names: string[]): string[] {
  const dirs = new Set<string>();
  for (const name of names) for (let dir = posix.dirname(name); dir !== '.'; dir = posix.dirname(dir)) dirs.add(dir);
  return [...dirs].sort((a, b) => a.split('/').length - b.split('/').length);
}

function bwrapArgs(options: SandboxOptions, limits: Required<SandboxLimits>, fileFds: [string, number][]): string[] {
  // No --new-session: the sandbox's init must stay in the process group Clotho kills. Spawned detached, it has no
  // controlling terminal to inject keystrokes into (the reason for --new-session).
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--hostname', 'sandbox'];
  for (const entry of rootEntries())
    args.push(...(entry.symlink ? ['--symlink', entry.symlink, entry.path] : ['--ro-bind', entry.path, entry.path]));
  for (const path of ETC_FILES) args.push('--ro-bind-try', path, path);
  for (const path of options.readOnlyBinds ?? []) args.push('--ro-bind', normalize(path), normalize(path));
  args.push('--proc', '/proc', '--dev', '/dev', '--remount-ro', '/dev');
  args.push('--size', String(limits.diskBytes), '--tmpfs', SANDBOX_DIR);
  for (const dir of foldersOf(fileFds.map(([name]) => name))) args.push('--dir', `${SANDBOX_DIR}/${dir}`);
  for (const [name, fd] of fileFds) args.push('--file', String(fd), `${SANDBOX_DIR}/${name}`);
  for (const { host, path } of options.writableBinds ?? []) args.push('--bind', normalize(host), sandboxPath(path));
  // Last: everything mounted above stays as it is, the root folder itself (and what bwrap made in it) becomes read-only.
  args.push('--remount-ro', '/', '--chdir', sandboxPath(options.cwd ?? SANDBOX_DIR), '--');
  // The shell says the sandbox is up (namespaces made, folders mounted) on fd 3 and closes it before the program runs:
  // what happens after that is the program's doing, what fails before it is the sandbox's.
  args.push('sh', '-c', 'echo >&3; exec "$@" 3>&-', 'sandbox');
  args.push(
    'prlimit',
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    `--as=${limits.memoryBytes}`,
    `--nproc=${limits.processes}`,
    `--fsize=${limits.fileBytes}`,
    `--nofile=${limits.openFiles}`,
    '--core=0',
    '--',
    ...options.command,
  );
  return args;
}

const SIGNAL_NAMES = new Map(Object.entries(osConstants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

/**
 * Runs `command` in a fresh sandbox (see the module's comment) and reports how it ended. A program that fails, crashes,
 * times out or floods its output is a normal result; a sandbox that cannot start (bwrap missing, namespaces refused,
 * the command not installed) throws an Error, so that the step calling it is retried rather than scored.
 */
export async function runSandboxed(options: SandboxOptions): Promise<SandboxResult> {
  const limits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits };
  const files = Object.entries(options.files ?? {}).map(([name, content]) => [workPath(name), content] as const);
  const [program] = options.command;
  if (!program) throw new Error('sandbox: empty command');
  checkCommand(
    program,
    Object.fromEntries(files),
    (options.readOnlyBinds ?? []).map((p) => normalize(p)),
  );
  const bwrap = bwrapPath();
  options.signal?.throwIfAborted();

  const fileFds = files.map(([name], i) => [name, 4 + i] as [string, number]);
  const env = { ...options.env, PATH: SANDBOX_PATH, HOME: SANDBOX_DIR, TMPDIR: SANDBOX_DIR, LANG: 'C.UTF-8' };
  const asRoot = process.getuid?.() === 0;
  const started = Date.now();
  const child = spawn(bwrap, bwrapArgs(options, limits, fileFds), {
    env,
    cwd: '/',
    // Its own process group, killed as a whole: bwrap's --die-with-parent alone misses a kill that comes while bwrap is
    // still making the namespaces (the sandbox's init outlived it in about half of the runs aborted within 15 ms).
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe', ...files.map(() => 'pipe' as const)],
    ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
  });

  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let outputSize = 0;
  let outputTruncated = false;
  let killedBy: SandboxKill | null = null;
  let aborted = false;
  let ready = false;
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const kill = (why: SandboxKill | 'abort') => {
    if (why === 'abort') aborted = true;
    else killedBy ??= why;
    killGroup();
  };
  const collect = (into: Buffer[]) => (chunk: Buffer) => {
    const room = limits.outputBytes - outputSize;
    if (chunk.length > room) {
      if (room > 0) into.push(chunk.subarray(0, room));
      outputSize = limits.outputBytes;
      outputTruncated = true;
      kill('output');
      return;
    }
    into.push(chunk);
    outputSize += chunk.length;
  };
  child.stdout!.on('data', collect(out));
  child.stderr!.on('data', collect(err));
  (child.stdio[3] as NodeJS.ReadableStream).on('data', () => (ready = true));
  // The program may exit without reading its stdin or bwrap die before reading a file: EPIPE is not an error here.
  for (const stream of child.stdio) stream?.on('error', () => undefined);
  child.stdin!.end(options.stdin ?? '');
  files.forEach(([, content], i) => (child.stdio[4 + i] as NodeJS.WritableStream).end(content));

  const timer = setTimeout(() => kill('wall_time'), limits.wallTimeMs);
  const onAbort = () => kill('abort');
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', (error) => reject(new Error(`sandbox: could not start bwrap: ${error.message}`)));
    child.once('close', (exitCode) => resolve(exitCode));
  }).finally(() => {
    killGroup(); // anything of the group still there: the pid stays reserved while the group has members, so this is ours
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  });

  const stdout = Buffer.concat(out).toString('utf8');
  const stderr = Buffer.concat(err).toString('utf8');
  if (aborted) throw options.signal?.reason instanceof Error ? options.signal.reason : new Error('sandbox: run aborted');
  if (!ready) {
    const why =
      killedBy === 'wall_time' ? `did not start within ${limits.wallTimeMs} ms` : `failed to start (exit ${code}): ${stderr.trim()}`;
    throw new Error(`sandbox: bwrap ${why}; \`node ${ENSURE_SANDBOX_SCRIPT}\` checks the setup`);
  }
  const durationMs = Date.now() - started;
  if (killedBy) return { exitCode: null, stdout, stderr, timedOut: killedBy === 'wall_time', killedBy, outputTruncated, durationMs };
  const signal = code !== null && code > 128 ? (SIGNAL_NAMES.get(code - 128) ?? null) : null;
  return { exitCode: code, stdout, stderr, timedOut: signal === 'SIGXCPU', killedBy: signal, outputTruncated, durationMs };
}
