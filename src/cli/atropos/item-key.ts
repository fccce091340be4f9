import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../../config/config-error.js';

/**
 * The file of an Atropos run's item key, `<store>/<run>/<env>/atropos-item-key` (mode 0600): the Python worker signs
 * the items it pickles with it and unpickles only items so signed, since unpickling runs code and anyone who can start
 * a workflow on the server can write an item into a history. The key stays out of Temporal: it lives in the run's
 * store folder, which every worker of the run reaches already (they write its groups there), on this host or, through
 * a shared folder, on others. Not a `.json`, so never a store entry.
 */
export function atroposItemKeyPath(storeRoot: string, runId: string, environment: string): string {
  return join(storeRoot, runId, environment, 'atropos-item-key');
}

/**
 * The run's item key file, made (256 random bits, mode 0600) when the run has none, unless `joining`: a worker that
 * joins a run reads the key its first command made, and is refused without one (it would sign with another key).
 */
export async function ensureAtroposItemKey(path: string, runId: string, joining: boolean): Promise<string> {
  const existing = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (existing?.trim()) return path;
  if (joining) {
    throw new ConfigError([
      `run ${runId} has no Atropos item key at ${path}: start it with clotho process or serve --atropos, and give its workers the run's --store`,
    ]);
  }
  // Written whole under another name, then linked into place: of two commands making it at once, the first one's wins.
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(temporary, randomBytes(32).toString('hex'), { mode: 0o600 });
  try {
    await link(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await rm(temporary, { force: true });
  }
  return path;
}
