/**
 * Atropos's own trajectory API (`run-api` from the `atroposlib` package on PyPI) in a virtualenv the bench makes
 * itself, so that bench/api measures it on the same load as Clotho's. Without PyPI (and no venv made before) the
 * bench goes on without it and says why.
 */
import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../temporal-dev/index.js';
import { startApiChild, type ApiChild } from './processes.js';

const run = promisify(execFile);
const repoRoot = join(import.meta.dirname, '..', '..');
/** Beside the project's other venvs; ignored by git (`.clotho/`). */
const VENV = join(repoRoot, '.clotho', 'atropos-venv');
const RUN_API = join(VENV, 'bin', 'run-api');
const PYTHON = process.env.PYTHON ?? 'python3';

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/** Whether pip could reach PyPI: one request for the package's index page, with a short timeout. */
async function pypiReachable(): Promise<boolean> {
  try {
    return (await fetch('https://pypi.org/simple/atroposlib/', { signal: AbortSignal.timeout(10_000) })).ok;
  } catch {
    return false;
  }
}

/**
 * The path of `run-api`, installing `atroposlib` into the venv the first time; or a sentence saying why there is
 * none (no PyPI, no Python venv module, a failed install).
 */
export async function ensureAtroposRunApi(): Promise<{ runApi: string } | { skipped: string }> {
  if (await exists(RUN_API)) return { runApi: RUN_API };
  if (!(await pypiReachable())) return { skipped: 'PyPI (https://pypi.org) is unreachable, so atroposlib cannot be installed' };
  try {
    console.log(`installing atroposlib from PyPI into ${VENV} (once; about a minute)…`);
    await run(PYTHON, ['-m', 'venv', VENV]);
    await run(join(VENV, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', 'atroposlib'], {
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    return { skipped: `installing atroposlib into ${VENV} failed: ${(error as Error).message.split('\n')[0]}` };
  }
  return (await exists(RUN_API)) ? { runApi: RUN_API } : { skipped: `atroposlib installed but ${RUN_API} is missing` };
}

/** Starts `run-api` on a free loopback port and waits until it answers `GET /`. */
export async function startAtroposApi(runApi: string): Promise<ApiChild> {
  const port = await freePort();
  return startApiChild(runApi, ['--host', '127.0.0.1', '--port', String(port)], { url: `http://127.0.0.1:${port}` });
}
