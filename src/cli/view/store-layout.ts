import { groupKey, loadGroupState, type GroupState } from '../../activities/group-state.js';
import type { TrajectoryStore } from '../../store/trajectory-store.js';
import type { GroupAddress } from './model.js';

/**
 * How the viewer (and `inspect`, `sft-gen --run`) finds its way in a trajectory store of any kind, a directory or an
 * S3 bucket, through its `list`: keys are `<run>/<environment>/item-<i>/<part>` (src/activities/group-state.ts),
 * `group` once assembled (`attempt-<n>/group-<k>` for the k-th group an Atropos environment's `collect_trajectories`
 * returned in attempt n of its collect, `group-<k>` before attempts had keys of their own),
 * `parsed` once parsed, and the group's state as records `turn-<t>/prompt` and `turn-<t>/generated`, newest last.
 */

/** Top-level prefixes that are not runs: the API's posted groups and accepted keys, the batcher's state. */
const NOT_RUNS = new Set(['api', 'api-accepted', 'batcher']);
/** A key inside a group: run, environment, `item-<i>`, then the part. */
const GROUP_PART = /^([^/]+)\/([^/]+)\/item-(\d+)\/(.+)$/;
/** An assembled group's part: Clotho's `group`, or an Atropos group's `attempt-<n>/group-<k>` (or `group-<k>`). */
const ASSEMBLED = /^(?:attempt-(\d+)\/)?group(?:-(\d+))?$/;

/** One item of a run in the store. */
export interface StoredItem extends GroupAddress {
  /** Whether the group was assembled (`group` or `group-<k>`): it was scored and delivered. */
  assembled: boolean;
}

/** The items of a run that the store holds, by environment (in name order) and item index. */
export async function listStoredItems(store: TrajectoryStore, runId: string): Promise<StoredItem[]> {
  const items = new Map<string, StoredItem>();
  for await (const { key } of store.list(runId)) {
    const match = GROUP_PART.exec(key);
    if (!match || match[1] !== runId) continue;
    const [, , environment, index, part] = match as unknown as [string, string, string, string, string];
    const id = `${environment}/${index}`;
    const item = items.get(id) ?? { runId, environment, itemIndex: Number(index), assembled: false };
    item.assembled ||= ASSEMBLED.test(part);
    items.set(id, item);
  }
  return [...items.values()].sort((a, b) => a.environment.localeCompare(b.environment) || a.itemIndex - b.itemIndex);
}

/** Runs in the store: top-level prefixes holding `<environment>/item-<i>` entries, most recently written first. */
export async function listStoredRuns(store: TrajectoryStore): Promise<string[]> {
  const latest = new Map<string, number>();
  for await (const { key, modified } of store.list('')) {
    const match = GROUP_PART.exec(key);
    if (!match || NOT_RUNS.has(match[1]!)) continue;
    latest.set(match[1]!, Math.max(latest.get(match[1]!) ?? 0, modified.getTime()));
  }
  return [...latest].sort(([a, at], [b, bt]) => bt - at || a.localeCompare(b)).map(([id]) => id);
}

/** The parsed answers of a group (one per rollout), or null when it was never parsed. */
export async function readParsed(store: TrajectoryStore, address: GroupAddress): Promise<unknown[] | null> {
  const parsed = await store.tryGet<unknown[]>(groupKey(address, 'parsed'));
  return Array.isArray(parsed) ? parsed : null;
}

/**
 * The item's assembled groups: its `group`, or an Atropos environment's `group-<k>` in order of k, of the newest
 * attempt of its collect that wrote any (the one its history answered, unless a later attempt wrote none; `clotho
 * inspect` reads the answered keys from the history). Found by listing the item, so a Clotho group costs one read as
 * before; empty when none was assembled.
 */
export async function readAssembled(store: TrajectoryStore, address: GroupAddress): Promise<unknown[]> {
  const group = await store.tryGet(groupKey(address, 'group'));
  if (group !== undefined) return [group];
  const prefix = `${groupKey(address)}/`;
  const parts: { attempt: number; k: number; key: string }[] = [];
  for await (const { key } of store.list(groupKey(address))) {
    const match = key.startsWith(prefix) ? ASSEMBLED.exec(key.slice(prefix.length)) : null;
    if (match?.[2] !== undefined) parts.push({ attempt: Number(match[1] ?? 0), k: Number(match[2]), key });
  }
  const newest = Math.max(...parts.map((p) => p.attempt));
  const kept = parts.filter((p) => p.attempt === newest).sort((a, b) => a.k - b.k);
  const groups = await Promise.all(kept.map(({ key }) => store.tryGet(key)));
  return groups.filter((g) => g !== undefined);
}

/**
 * The newest state of a group that was not assembled: `turn-t/generated` after `turn-t/prompt`, and both after those
 * of turn t-1. Undefined when the group has no state record (it failed before its prompt was written).
 */
export async function readNewestState(store: TrajectoryStore, address: GroupAddress): Promise<GroupState | undefined> {
  const prefix = groupKey(address);
  const records: { turn: number; generated: boolean; key: string }[] = [];
  for await (const { key } of store.list(prefix)) {
    const match = /^turn-(\d+)\/(prompt|generated)$/.exec(key.slice(prefix.length + 1));
    if (match) records.push({ turn: Number(match[1]), generated: match[2] === 'generated', key });
  }
  const newest = records.sort((a, b) => b.turn - a.turn || Number(b.generated) - Number(a.generated))[0];
  return newest ? loadGroupState(store, newest.key) : undefined;
}

/**
 * Finds JSONL lines in the store: `clotho process` writes each delivered group's `group` entry to the JSONL (its float
 * fields as floats since issue 43, as integers before), so a line that reads back as the same JSON is that group.
 * Only sizes are compared until one matches: the listing's, against the line's as JSON.stringify writes it (as the
 * store holds a group Clotho assembled).
 */
export async function findGroupsInStore(store: TrajectoryStore, lines: string[]): Promise<Map<number, GroupAddress>> {
  const texts = lines.map(asStored);
  const bySize = new Map<number, number[]>();
  texts.forEach((text, i) => {
    if (text === undefined) return;
    const size = Buffer.byteLength(text);
    bySize.set(size, [...(bySize.get(size) ?? []), i]);
  });
  const found = new Map<number, GroupAddress>();
  for await (const { key, size } of store.list('')) {
    const match = GROUP_PART.exec(key);
    if (!match || !ASSEMBLED.test(match[4]!) || NOT_RUNS.has(match[1]!)) continue;
    const candidates = bySize.get(size)?.filter((i) => !found.has(i));
    if (!candidates?.length) continue;
    const text = JSON.stringify(await store.tryGet(key));
    const at = candidates.find((i) => texts[i] === text);
    if (at !== undefined) found.set(at, { runId: match[1]!, environment: match[2]!, itemIndex: Number(match[3]) });
    if (found.size === lines.length) break;
  }
  return found;
}

/** A line's group as JSON.stringify writes it; undefined when the line is not JSON. */
function asStored(line: string): string | undefined {
  try {
    return JSON.stringify(JSON.parse(line));
  } catch {
    return undefined;
  }
}
