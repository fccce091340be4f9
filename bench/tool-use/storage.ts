/**
 * Bytes one episode leaves in the file-system trajectory store, by kind of record, beside what the scheme before
 * per-turn deltas stored for the same episode: the whole group state at every turn, and every turn's completion
 * checkpoint with the whole prompt's token ids.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { groupKey, loadGroupState, type GroupAddress } from '../../src/activities/group-state.js';
import type { FileSystemStore } from '../../src/store/trajectory-store.js';

/** Kinds of record under an episode's keys. */
export const PARTS = ['state', 'checkpoints', 'tools', 'other'] as const;
export type Part = (typeof PARTS)[number];

export interface EpisodeStorage {
  files: number;
  /** Bytes on disk by kind: group-state records, completion checkpoints, tool-call records, the rest (parsed, group). */
  bytes: Record<Part, number>;
  /** Bytes of the state records had each held the whole materialized state (the old scheme). */
  wholeState: number;
  /** Bytes of the checkpoints had each held its whole prompt's token ids (the old scheme). */
  wholeCheckpoints: number;
}

const size = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

function partOf(key: string): Part {
  if (/^turn-\d+\/(prompt|generated)$/.test(key)) return 'state';
  if (/^turn-\d+\/sample-\d+$/.test(key)) return 'checkpoints';
  if (/^turn-\d+\/sample-\d+\/call-\d+$/.test(key)) return 'tools';
  return 'other';
}

/** Measures the keys `<run>/<env>/item-<i>/...` of one episode. */
export async function measureEpisodeStorage(store: FileSystemStore, address: GroupAddress): Promise<EpisodeStorage> {
  const root = join(store.root, groupKey(address));
  const files = (await readdir(root, { recursive: true })).filter((f) => f.endsWith('.json')).map((f) => f.replaceAll('\\', '/'));
  const result: EpisodeStorage = {
    files: files.length,
    bytes: { state: 0, checkpoints: 0, tools: 0, other: 0 },
    wholeState: 0,
    wholeCheckpoints: 0,
  };
  for (const file of files) {
    const key = file.slice(0, -'.json'.length);
    const part = partOf(key);
    result.bytes[part] += (await stat(join(root, file))).size;
    if (part === 'state') result.wholeState += size(await loadGroupState(store, groupKey(address, key)));
    if (part === 'checkpoints') result.wholeCheckpoints += await wholeCheckpointSize(store, address, key);
  }
  return result;
}

/** A checkpoint keeps the prompt ids beyond the sequence it extends; the old one kept them all. */
async function wholeCheckpointSize(store: FileSystemStore, address: GroupAddress, key: string): Promise<number> {
  const saved = await store.get<{ promptSuffix?: number[] | null }>(groupKey(address, key));
  if (!saved.promptSuffix) return size(saved);
  const [, turn, sample] = /^turn-(\d+)\/sample-(\d+)$/.exec(key)!;
  const before = await loadGroupState(store, groupKey(address, `turn-${turn}`, 'prompt'));
  const { promptSuffix, ...completion } = saved;
  return size({ ...completion, promptTokenIds: [...before.trajectories[Number(sample)]!.tokens, ...promptSuffix] });
}
