import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { groupKey, loadGroupState, type GroupState } from '../../activities/group-state.js';
import { FileSystemStore } from '../../store/trajectory-store.js';
import type { GroupAddress } from './model.js';

/**
 * How the viewer finds its way in a file-system trajectory store. Keys are `<run>/<environment>/item-<i>/<part>`
 * (src/activities/group-state.ts): `group` once assembled, `parsed` once parsed, and the group's state as records
 * `turn-<t>/prompt` and `turn-<t>/generated`, newest last.
 */

/** Top-level folders that are not runs: the API's posted groups and accepted keys, the batcher's state. */
const NOT_RUNS = new Set(['api', 'api-accepted', 'batcher']);
const ITEM = /^item-(\d+)$/;

const dirs = async (path: string): Promise<string[]> => {
  try {
    return (await readdir(path, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
};

/** One item folder of a run in the store. */
export interface StoredItem extends GroupAddress {
  /** Whether the group was assembled (`group.json`): it was scored and delivered. */
  assembled: boolean;
}

/** The items of a run that the store holds, by environment and item index. */
export async function listStoredItems(root: string, runId: string): Promise<StoredItem[]> {
  const items: StoredItem[] = [];
  for (const environment of (await dirs(join(root, runId))).sort()) {
    const found = await Promise.all(
      (await dirs(join(root, runId, environment))).flatMap((name) => {
        const match = ITEM.exec(name);
        if (!match) return [];
        const itemIndex = Number(match[1]);
        return [stat(join(root, runId, environment, name, 'group.json')).then(
          () => ({ runId, environment, itemIndex, assembled: true }),
          () => ({ runId, environment, itemIndex, assembled: false }),
        )];
      }),
    );
    items.push(...found.sort((a, b) => a.itemIndex - b.itemIndex));
  }
  return items;
}

/** Runs in the store: top-level folders holding `<environment>/item-<i>` folders, newest first. */
export async function listStoredRuns(root: string): Promise<string[]> {
  const runs: { id: string; mtime: number }[] = [];
  for (const id of await dirs(root)) {
    if (NOT_RUNS.has(id)) continue;
    for (const environment of await dirs(join(root, id))) {
      if (!(await dirs(join(root, id, environment))).some((name) => ITEM.test(name))) continue;
      runs.push({ id, mtime: (await stat(join(root, id))).mtimeMs });
      break;
    }
  }
  return runs.sort((a, b) => b.mtime - a.mtime || a.id.localeCompare(b.id)).map((r) => r.id);
}

/** The parsed answers of a group (one per rollout), or null when it was never parsed. */
export async function readParsed(root: string, address: GroupAddress): Promise<unknown[] | null> {
  const parsed = await new FileSystemStore(root).tryGet<unknown[]>(groupKey(address, 'parsed'));
  return Array.isArray(parsed) ? parsed : null;
}

/** The assembled group (`group.json`), or undefined. */
export function readAssembled(root: string, address: GroupAddress): Promise<unknown> {
  return new FileSystemStore(root).tryGet(groupKey(address, 'group'));
}

/**
 * The newest state of a group that was not assembled: `turn-t/generated` after `turn-t/prompt`, and both after those
 * of turn t-1. Undefined when the group has no state record (it failed before its prompt was written).
 */
export async function readNewestState(root: string, address: GroupAddress): Promise<GroupState | undefined> {
  const store = new FileSystemStore(root);
  const dir = join(root, address.runId, address.environment, `item-${address.itemIndex}`);
  const turns = (await dirs(dir))
    .flatMap((name) => (/^turn-(\d+)$/.exec(name) ? [Number(name.slice(5))] : []))
    .sort((a, b) => b - a);
  for (const turn of turns) {
    for (const part of ['generated', 'prompt']) {
      const key = groupKey(address, `turn-${turn}`, part);
      if ((await store.tryGet(key)) !== undefined) return loadGroupState(store, key);
    }
  }
  return undefined;
}

/**
 * Finds JSONL lines in the store: `clotho process` writes each delivered group's `group.json` to the JSONL byte for
 * byte, so a line of the same size and text is that group. Only sizes are read until one matches.
 */
export async function findGroupsInStore(root: string, lines: string[]): Promise<Map<number, GroupAddress>> {
  const bySize = new Map<number, number[]>();
  lines.forEach((line, i) => {
    const size = Buffer.byteLength(line);
    bySize.set(size, [...(bySize.get(size) ?? []), i]);
  });
  const found = new Map<number, GroupAddress>();
  for (const runId of await listStoredRuns(root)) {
    for (const item of await listStoredItems(root, runId)) {
      if (!item.assembled) continue;
      const path = join(root, runId, item.environment, `item-${item.itemIndex}`, 'group.json');
      const candidates = bySize.get((await stat(path)).size)?.filter((i) => !found.has(i));
      if (!candidates?.length) continue;
      const text = await readFile(path, 'utf8');
      const match = candidates.find((i) => lines[i] === text);
      if (match !== undefined) found.set(match, { runId, environment: item.environment, itemIndex: item.itemIndex });
    }
    if (found.size === lines.length) break;
  }
  return found;
}
