import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { StoreRef } from '../schema/rollout.js';

/**
 * Where activities keep everything too big for a Temporal payload: token ids, masks, logprobs,
 * messages. Keys are deterministic, so a retried activity overwrites what its failed attempt wrote.
 */
export interface TrajectoryStore {
  /** Writes `value` as JSON under `key`; a {@link JsonBytes} is written as it is. */
  put(key: string, value: unknown): Promise<StoreRef>;
  get<T = unknown>(ref: StoreRef | string): Promise<T>;
  /** The value under a key, or undefined when nothing was written there (a checkpoint not yet taken). */
  tryGet<T = unknown>(key: string): Promise<T | undefined>;
  delete(key: string): Promise<void>;
  /**
   * Deletes the entry `prefix` and every entry under `prefix/` (a group's `<run>/<env>/item-<i>`), whole segments
   * only: `item-1` leaves `item-10` alone. Deleting what is not there is no error.
   */
  deletePrefix(prefix: string): Promise<void>;
  /** The entries `prefix` and under `prefix/` (everything when `prefix` is empty), in no particular order. */
  list(prefix: string): AsyncIterable<StoredEntry>;
}

/** One entry of a store as `list` sees it. */
export interface StoredEntry {
  key: string;
  /** Bytes the entry takes in the store. */
  size: number;
  /** When it was last written. */
  modified: Date;
}

/**
 * A value already written as JSON (a posted group kept as it came): `put` stores these bytes as they are instead of
 * serialising a parsed copy again, which for a group's token arrays costs more than parsing them did.
 */
export class JsonBytes {
  constructor(readonly bytes: Uint8Array) {}
}

/** What `put` writes for a value. */
export const serialised = (value: unknown): Uint8Array | string => (value instanceof JsonBytes ? value.bytes : JSON.stringify(value));

const KEY = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

/** Store keys: `<run>/<environment>/item-<i>/<part>`; all parts are checked against path tricks. */
export function storeKey(...parts: (string | number)[]): string {
  const key = parts.join('/');
  if (!KEY.test(key) || key.split('/').some((p) => p === '.' || p === '..')) {
    throw new Error(`invalid store key "${key}"`);
  }
  return key;
}

/** A store on the local file system: one JSON file per key, written atomically (temp file + rename). */
export class FileSystemStore implements TrajectoryStore {
  readonly root: string;
  /** Directories this store made or found: one mkdir per directory, not one per write. */
  private readonly made = new Set<string>();

  constructor(root: string) {
    // A URL is never a directory: say so rather than make a directory named `s3:` (openStore opens the URLs).
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(root)) {
      throw new Error(`--store ${root}: a URL, not a directory (trajectory stores are directories and s3:// URLs)`);
    }
    this.root = resolve(root);
  }

  private path(key: string): string {
    storeKey(key);
    const path = join(this.root, `${key}.json`);
    if (!path.startsWith(this.root + sep)) throw new Error(`store key escapes the store: "${key}"`);
    return path;
  }

  async put(key: string, value: unknown): Promise<StoreRef> {
    const path = this.path(key);
    const dir = dirname(path);
    if (!this.made.has(dir)) {
      await mkdir(dir, { recursive: true });
      this.made.add(dir);
    }
    const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const text = serialised(value);
    try {
      await writeFile(temporary, text);
    } catch (error) {
      // The directory went away since it was made (a cleaned store): make it again, once.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await mkdir(dir, { recursive: true });
      await writeFile(temporary, text);
    }
    await rename(temporary, path);
    return { key };
  }

  async get<T = unknown>(ref: StoreRef | string): Promise<T> {
    const key = typeof ref === 'string' ? ref : ref.key;
    const value = await this.tryGet<T>(key);
    if (value === undefined) throw new Error(`trajectory store has no entry "${key}" under ${this.root}`);
    return value;
  }

  async tryGet<T = unknown>(key: string): Promise<T | undefined> {
    try {
      return JSON.parse(await readFile(this.path(key), 'utf8')) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }

  async deletePrefix(prefix: string): Promise<void> {
    const file = this.path(prefix);
    await rm(file.slice(0, -'.json'.length), { recursive: true, force: true });
    await rm(file, { force: true });
    // Directories under the prefix are gone: a later put must make them again.
    const dir = file.slice(0, -'.json'.length);
    for (const made of this.made) if (made === dir || made.startsWith(dir + sep)) this.made.delete(made);
  }

  async *list(prefix: string): AsyncIterable<StoredEntry> {
    const base = prefix === '' ? this.root : this.path(prefix).slice(0, -'.json'.length);
    if (prefix !== '') {
      const own = await statOrUndefined(`${base}.json`);
      if (own?.isFile()) yield { key: prefix, size: own.size, modified: own.mtime };
    }
    let entries;
    try {
      entries = await readdir(base, { recursive: true, withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw error;
    }
    for (const entry of entries) {
      // Temporary files of writes in progress end in .tmp, never .json.
      if (!entry.isFile() || !entry.name.endsWith('.json')) continue;
      const path = join(entry.parentPath, entry.name);
      const info = await statOrUndefined(path);
      if (!info) continue; // deleted since the directory was read
      yield { key: relative(this.root, path).slice(0, -'.json'.length).split(sep).join('/'), size: info.size, modified: info.mtime };
    }
  }
}

async function statOrUndefined(path: string) {
  try {
    return await stat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
