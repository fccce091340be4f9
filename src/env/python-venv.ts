import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const STAMP = 'clotho-venv.stamp';

/** A project-local Python venv that Clotho installs on first use (the Atropos worker's, an agent's). */
export interface VenvSpec {
  /** Where it lives. */
  venv: string;
  /** Names what is installed; a venv stamped otherwise is installed anew (a pin or a pyproject's hash). */
  stamp: string;
  /** What the notice and an error call it. */
  what: string;
  /** pip's arguments after `install`, given the venv being built (sources may be copied into it first). */
  pipArgs(building: string): Promise<string[]>;
  notice(line: string): void;
  /** The Python the venv is made from. @default `$PYTHON`, else `python3` */
  python?: string;
  /** What a failure suggests besides the error (an env var that names a Python of one's own). */
  hint?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * The venv's Python, installed first when it is missing or stamped otherwise: built under a temporary name and renamed
 * whole, so that a command killed while installing leaves no half venv, and of two commands installing at once the
 * second keeps the first's (which may be running already). Returns the path of its `bin/python`.
 */
export async function ensureVenv(spec: VenvSpec): Promise<string> {
  const { venv, env = process.env } = spec;
  const python = join(venv, 'bin', 'python');
  const installed = async () => (await readFile(join(venv, STAMP), 'utf8').catch(() => '')) === spec.stamp;
  if (await installed()) return python;
  spec.notice(`installing ${spec.what} into ${venv} (once; about a minute)`);
  await mkdir(dirname(venv), { recursive: true });
  const temporary = `${venv}.installing-${process.pid}`;
  try {
    await run(spec.python ?? env.PYTHON ?? 'python3', ['-m', 'venv', temporary], { env });
    const args = await spec.pipArgs(temporary);
    await run(join(temporary, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...args], {
      env,
      maxBuffer: 16 << 20,
    });
    await pointScriptsAt(join(temporary, 'bin'), temporary, venv);
    await writeFile(join(temporary, STAMP), spec.stamp);
    // Another command may have installed the same meanwhile, and be running from it: keep that one. A venv of another
    // stamp is replaced whole.
    if (await installed()) return python;
    await rm(venv, { recursive: true, force: true });
    await rename(temporary, venv);
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.trim().split('\n').slice(-5).join('\n') ?? String(error);
    throw new Error(`could not install ${spec.what} into ${venv}:\n${detail}${spec.hint ? `\n(${spec.hint})` : ''}`);
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
  return python;
}

/**
 * pip writes the venv's absolute path into its console scripts (`run-api`'s `#!` line) and `activate`: built under a
 * temporary name and renamed, they would name a Python that no longer exists, so they are pointed at the final path.
 */
export async function pointScriptsAt(bin: string, built: string, final: string): Promise<void> {
  for (const entry of await readdir(bin, { withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(bin, entry.name);
    const text = await readFile(path);
    // Text scripts only: the interpreter itself is a binary (or a link) that never names the venv.
    if (text.includes(0) || !text.includes(built)) continue;
    await writeFile(path, text.toString('utf8').replaceAll(built, final));
  }
}
