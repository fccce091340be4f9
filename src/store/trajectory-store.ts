import { appendFileSync } from 'node:fs';
import { appendFile, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { StoreRef } from '../schema/rollout.js';
import {
  deletedFrame,
  groupOfRecord,
  JOURNAL_SUFFIX,
  JournalDamagedError,
  journalFrame,
  readJournal,
  type JournalDamage,
} from './group-journal.js';
import { storeKey } from '../schema/store-keys.js';

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

export { storeKey } from '../schema/store-keys.js';

/**
 * A store on the local file system. The records of a rollout group (`<run>/<env>/item-<i>/<part>`) are frames appended
 * to the group's journal (`src/store/group-journal.ts`); every other key is a JSON file, written atomically (temporary
 * file and rename). A key of a group written as a file by an older Clotho is still read, listed and deleted.
 */
export class FileSystemStore implements TrajectoryStore {
  readonly root: string;
  /** Directories this store made or found: one mkdir per directory, not one per write. */
  private readonly made = new Set<string>();
  private readonly journals = new JournalCache();

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

  private journalOf(group: string): string {
    return this.path(group).slice(0, -'.json'.length) + JOURNAL_SUFFIX;
  }

  /** Runs `write` in `dir`, made first when this store has not seen it (or it went away since: a cleaned store). */
  private async inDirectory(dir: string, write: () => Promise<void>): Promise<void> {
    if (!this.made.has(dir)) {
      await mkdir(dir, { recursive: true });
      this.made.add(dir);
    }
    try {
      await write();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await mkdir(dir, { recursive: true });
      await write();
    }
  }

  async put(key: string, value: unknown): Promise<StoreRef> {
    const path = this.path(key);
    const group = groupOfRecord(key);
    if (group !== null) {
      const journal = this.journalOf(group);
      const frame = journalFrame(key, serialised(value));
      // Synchronous: an append to a file that exists cost 11–22 µs of CPU here against 80–100 µs through the thread pool
      // (fs.promises.appendFile, 64 writers at once); only a group's first record creates its journal.
      await this.inDirectory(dirname(journal), async () => appendFileSync(journal, frame));
      return { key };
    }
    const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const text = serialised(value);
    await this.inDirectory(dirname(path), () => writeFile(temporary, text));
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
    const path = this.path(key);
    const group = groupOfRecord(key);
    if (group !== null) {
      const entries = await this.readJournalOf(group);
      const value = entries?.get(key);
      if (value === null) return undefined;
      if (value !== undefined) return JSON.parse(value.toString('utf8')) as T;
    }
    try {
      return JSON.parse(await readFile(path, 'utf8')) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /**
   * The newest value of each key in a group's journal, or undefined when it has none. Journals read lately are kept,
   * so a read of a journal that grew reads what was appended since rather than the whole file again: loading an
   * episode's state walks its records back one by one, and would otherwise read the journal once per turn. A journal
   * with a damaged frame throws {@link JournalDamagedError}, at this read and every later one.
   */
  private async readJournalOf(group: string): Promise<Map<string, Buffer | null> | undefined> {
    const path = this.journalOf(group);
    let handle;
    try {
      handle = await open(path, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.journals.forget(path);
      return undefined;
    }
    try {
      const { ino, birthtimeMs, size } = await handle.stat();
      const kept = this.journals.take(path);
      // Another journal at the same path (the group deleted and written again) is read from its start.
      const same = kept && kept.ino === ino && kept.birthtimeMs === birthtimeMs && kept.read <= size;
      const index: JournalIndex = same ? kept : { ino, birthtimeMs, read: 0, entries: new Map() };
      if (size > index.read && !index.damage) {
        const tail = Buffer.allocUnsafe(size - index.read);
        const { bytesRead } = await handle.read(tail, 0, tail.length, index.read);
        const { read, damaged } = readJournal(tail.subarray(0, bytesRead), index.entries);
        if (damaged[0]) index.damage = { ...damaged[0], offset: index.read + damaged[0].offset };
        index.read += read;
      }
      this.journals.keep(path, index);
      if (index.damage) throw new JournalDamagedError(path, index.damage);
      return index.entries;
    } finally {
      await handle.close();
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.path(key);
    const group = groupOfRecord(key);
    if (group !== null && (await this.readJournalOf(group))?.get(key)) await appendFile(this.journalOf(group), deletedFrame(key));
    await rm(path, { force: true });
  }

  async deletePrefix(prefix: string): Promise<void> {
    const file = this.path(prefix);
    const dir = file.slice(0, -'.json'.length);
    // A prefix inside a group: its journal's keys under the prefix are marked deleted. The group itself or above:
    // its journal goes with the group's files (a journal lies beside its group's directory, or in one above it).
    const group = groupOfRecord(`${prefix}/_`);
    if (group !== null && group !== prefix) {
      const live = [...((await this.readJournalOf(group)) ?? [])].filter(([key, value]) => value !== null && under(key, prefix));
      if (live.length > 0) await appendFile(this.journalOf(group), Buffer.concat(live.map(([key]) => deletedFrame(key))));
    }
    await rm(dir, { recursive: true, force: true });
    await rm(file, { force: true });
    await rm(dir + JOURNAL_SUFFIX, { force: true });
    this.journals.forgetUnder(dir);
    // Directories under the prefix are gone: a later put must make them again.
    for (const made of this.made) if (made === dir || made.startsWith(dir + sep)) this.made.delete(made);
  }

  async *list(prefix: string): AsyncIterable<StoredEntry> {
    const base = prefix === '' ? this.root : this.path(prefix).slice(0, -'.json'.length);
    if (prefix !== '') {
      const own = await statOrUndefined(`${base}.json`);
      if (own?.isFile()) yield { key: prefix, size: own.size, modified: own.mtime };
      // The journal of the group the prefix is or lies in sits beside the group's directory, not under `base`.
      const group = groupOfRecord(`${prefix}/_`);
      if (group !== null) yield* this.journalEntries(this.journalOf(group), prefix);
    }
    let entries;
    try {
      entries = await readdir(base, { recursive: true, withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw error;
    }
    for (const entry of entries) {
      if (!entry.isFile()) continue;
      const path = join(entry.parentPath, entry.name);
      if (entry.name.endsWith(JOURNAL_SUFFIX)) {
        yield* this.journalEntries(path, prefix);
        continue;
      }
      // Temporary files of writes in progress end in .tmp, never .json.
      if (!entry.name.endsWith('.json')) continue;
      const info = await statOrUndefined(path);
      if (!info) continue; // deleted since the directory was read
      yield { key: this.keyOf(path, '.json'), size: info.size, modified: info.mtime };
    }
  }

  private keyOf(path: string, suffix: string): string {
    return relative(this.root, path).slice(0, -suffix.length).split(sep).join('/');
  }

  /** A journal's live keys under `prefix`, each as large as its value and as new as the journal's last write. */
  private async *journalEntries(journal: string, prefix: string): AsyncIterable<StoredEntry> {
    const info = await statOrUndefined(journal);
    const entries = info?.isFile() ? await this.readJournalOf(this.keyOf(journal, JOURNAL_SUFFIX)) : undefined;
    for (const [key, value] of entries ?? []) {
      if (value !== null && under(key, prefix)) yield { key, size: value.length, modified: info!.mtime };
    }
  }
}

/** What this process read of a journal: the file it was (inode and birth), the bytes read, the newest values. */
interface JournalIndex {
  ino: number;
  birthtimeMs: number;
  read: number;
  entries: Map<string, Buffer | null>;
  /** The first damaged frame seen: the journal is read no further. */
  damage?: JournalDamage;
}

/** Journals read lately, the least recently used dropped past 64 MB of them. */
class JournalCache {
  private static readonly LIMIT = 64 * 2 ** 20;
  private readonly kept = new Map<string, JournalIndex>();
  private bytes = 0;

  take(path: string): JournalIndex | undefined {
    const index = this.kept.get(path);
    if (index) this.forget(path);
    return index;
  }

  keep(path: string, index: JournalIndex): void {
    this.kept.set(path, index);
    this.bytes += index.read;
    for (const [oldest, dropped] of this.kept) {
      if (this.bytes <= JournalCache.LIMIT || oldest === path) break;
      this.kept.delete(oldest);
      this.bytes -= dropped.read;
    }
  }

  forget(path: string): void {
    const index = this.kept.get(path);
    if (!index) return;
    this.kept.delete(path);
    this.bytes -= index.read;
  }

  /** Drops the journals at or under `dir` (the journal `dir.journal` and those inside `dir/`). */
  forgetUnder(dir: string): void {
    for (const path of [...this.kept.keys()]) if (path === dir + JOURNAL_SUFFIX || path.startsWith(dir + sep)) this.forget(path);
  }
}

/** Whether `key` is `prefix` or lies under it, by whole segments (everything lies under the empty prefix). */
const under = (key: string, prefix: string) => prefix === '' || key === prefix || key.startsWith(`${prefix}/`);

async function statOrUndefined(path: string) {
  try {
    return await stat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
