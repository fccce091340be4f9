import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { StoreRef } from '../schema/rollout.js';

/**
 * Where activities keep everything too big for a Temporal payload: token ids, masks, logprobs,
 * messages. Keys are deterministic, so a retried activity overwrites what its failed attempt wrote.
 */
export interface TrajectoryStore {
  put(key: string, value: unknown): Promise<StoreRef>;
  get<T = unknown>(ref: StoreRef | string): Promise<T>;
  /** The value under a key, or undefined when nothing was written there (a checkpoint not yet taken). */
  tryGet<T = unknown>(key: string): Promise<T | undefined>;
  delete(key: string): Promise<void>;
}

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
    const text = JSON.stringify(value);
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
}
