import { randomUUID } from 'node:crypto';
import { access, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { z } from 'zod';
import { clothoHome } from '../store/paths.js';
import { problemsError } from './problems.js';

/**
 * Reads a JSON-lines file, validating each line with `schema`. Blank lines are skipped.
 * @throws Error naming `file:line` and the field of every bad line (the first ten of them).
 */
export async function loadJsonl<S extends z.ZodType>(path: string, schema: S): Promise<z.infer<S>[]> {
  const text = await readFile(path, 'utf8');
  const rows: z.infer<S>[] = [];
  const problems: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const where = `${path}:${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      problems.push(`${where}: invalid JSON (${(error as Error).message})`);
      return;
    }
    const result = schema.safeParse(value);
    if (result.success) rows.push(result.data);
    else for (const issue of result.error.issues) problems.push(`${where}: ${issue.path.join('.') || '(line)'}: ${issue.message}`);
  });
  if (problems.length > 0) throw problemsError(`invalid data in ${path}`, problems);
  return rows;
}

/** Where {@link resolveDataset} finds a data set: the user's file, else a cached download, else the public copy. */
export interface DatasetSource {
  /** A local file, used as is; the user's `--env.data_path`. */
  path?: string | null;
  /** File name in the cache, e.g. `gsm8k-train.jsonl`. */
  cacheName: string;
  /** Public copy to download when there is no path and no cached file. */
  url: string;
  /**
   * Root of Clotho's cache.
   * @default `$CLOTHO_HOME`, else `.clotho` in the repository
   */
  home?: string;
}

/** The directory datasets are cached in. */
export function datasetCacheDir(home = clothoHome()): string {
  return join(home, 'datasets');
}

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/**
 * Finds a dataset file: the given path, else the cached copy, else a fresh download into the cache
 * (written to a temporary name and renamed, so a crash never leaves half a file that looks complete).
 * @returns the path of a readable file.
 */
export async function resolveDataset(source: DatasetSource): Promise<string> {
  if (source.path) {
    if (!(await exists(source.path))) throw new Error(`dataset file not found: ${source.path}`);
    return source.path;
  }
  const cached = join(datasetCacheDir(source.home), source.cacheName);
  if (await exists(cached)) return cached;
  let body: Buffer;
  try {
    const response = await fetch(source.url, { signal: AbortSignal.timeout(120_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
    body = Buffer.from(await response.arrayBuffer());
  } catch (error) {
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    throw new Error(`could not download ${source.url} (${reason}); pass --env.data_path <file> to use a local copy`);
  }
  await mkdir(dirname(cached), { recursive: true });
  const partial = `${cached}.${randomUUID()}.partial`;
  try {
    await writeFile(partial, body);
    await rename(partial, cached);
  } finally {
    await rm(partial, { force: true });
  }
  return cached;
}
