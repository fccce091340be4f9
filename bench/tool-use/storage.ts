/**
 * Bytes one episode leaves in the trajectory store, by kind of record (as the store lists them), beside what the scheme before
 * per-turn deltas stored for the same episode: the whole group state at every turn, and every turn's completion
 * checkpoint with the whole prompt's token ids.
 */
import { groupKey, loadGroupState, type GroupAddress } from '../../src/activities/group-state.js';
import type { TrajectoryStore } from '../../src/store/trajectory-store.js';

/** Kinds of record under an episode's keys. */
export const PARTS = ['state', 'checkpoints', 'tools', 'other'] as const;
export type Part = (typeof PARTS)[number];

export interface EpisodeStorage {
  records: number;
  /** Bytes by kind: group-state records, completion checkpoints, tool-call records, the rest (parsed, group). */
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
export async function measureEpisodeStorage(store: TrajectoryStore, address: GroupAddress): Promise<EpisodeStorage> {
  const prefix = `${groupKey(address)}/`;
  const entries: { key: string; size: number }[] = [];
  for await (const { key, size } of store.list(groupKey(address)))
    if (key.startsWith(prefix)) entries.push({ key: key.slice(prefix.length), size });
  const result: EpisodeStorage = {
    records: entries.length,
    bytes: { state: 0, checkpoints: 0, tools: 0, other: 0 },
    wholeState: 0,
    wholeCheckpoints: 0,
  };
  for (const { key, size: bytes } of entries) {
    const part = partOf(key);
    result.bytes[part] += bytes;
    if (part === 'state') result.wholeState += size(await loadGroupState(store, groupKey(address, key)));
    if (part === 'checkpoints') result.wholeCheckpoints += await wholeCheckpointSize(store, address, key);
  }
  return result;
}

/** A checkpoint keeps the prompt ids beyond the sequence it extends; the old one kept them all. */
async function wholeCheckpointSize(store: TrajectoryStore, address: GroupAddress, key: string): Promise<number> {
  const saved = await store.get<{ promptSuffix?: number[] | null }>(groupKey(address, key));
  if (!saved.promptSuffix) return size(saved);
  const [, turn, sample] = /^turn-(\d+)\/sample-(\d+)$/.exec(key)!;
  const before = await loadGroupState(store, groupKey(address, `turn-${turn}`, 'prompt'));
  const { promptSuffix, ...completion } = saved;
  return size({ ...completion, promptTokenIds: [...before.trajectories[Number(sample)]!.tokens, ...promptSuffix] });
}
