/**
 * Atropos's own trajectory API (`run-api` from the `atroposlib` package on PyPI), from the venv that runs Atropos's
 * environments (one pinned install for both), so that bench/api measures it on the same load as Clotho's. Without
 * PyPI (and no venv made before) the bench goes on without it and says why.
 */
import { access } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ensureAtroposPython } from '../../src/cli/atropos/python.js';
import { freePort } from '../../temporal-dev/index.js';
import { startApiChild, type ApiChild } from './processes.js';

/**
 * The path of `run-api` in the venv `clotho process --atropos` runs Atropos's environments from (atroposlib pinned,
 * installed the first time); or a sentence saying why there is none (no PyPI here, say).
 */
export async function ensureAtroposRunApi(): Promise<{ runApi: string } | { skipped: string }> {
  try {
    const runApi = join(dirname(await ensureAtroposPython((line) => console.log(line))), 'run-api');
    await access(runApi);
    return { runApi };
  } catch (error) {
    return { skipped: (error as Error).message.split('\n')[0]! };
  }
}

/** Starts `run-api` on a free loopback port and waits until it answers `GET /`. */
export async function startAtroposApi(runApi: string): Promise<ApiChild> {
  const port = await freePort();
  return startApiChild(runApi, ['--host', '127.0.0.1', '--port', String(port)], { url: `http://127.0.0.1:${port}` });
}
