import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileSystemStore } from '../store/trajectory-store.js';
import { cloneGroupState, loadGroupState, saveGroupBase, saveGroupDelta, type GroupState } from './group-state.js';

const base = (): GroupState => ({
  itemIndex: 0,
  groupOverrides: null,
  tools: null,
  stop: null,
  trajectories: [
    {
      messages: [{ role: 'user', content: 'q' }],
      tokens: [1],
      masks: [-100],
      logprobs: [1],
      completionTokens: 0,
      finishReason: null,
      done: false,
      state: { n: 0 },
    },
  ],
});

/** A store that counts reads, to see what a load costs. */
class CountingStore extends FileSystemStore {
  reads = 0;
  override async tryGet<T>(key: string) {
    this.reads++;
    return super.tryGet<T>(key);
  }
}

async function grow(store: FileSystemStore, run: string, turns: number) {
  let ref = await saveGroupBase(store, `${run}/env/item-0/turn-0/prompt`, base());
  let state = await loadGroupState(store, ref);
  for (let turn = 0; turn < turns; turn++) {
    const next = cloneGroupState(state);
    const t = next.trajectories[0]!;
    t.messages.push({ role: 'assistant', content: `a${turn}` });
    t.tokens.push(10 + turn);
    t.masks.push(10 + turn);
    t.logprobs.push(-0.5);
    t.state = { n: turn + 1 };
    ref = await saveGroupDelta(store, `${run}/env/item-0/turn-${turn}/generated`, ref, state, next);
    state = next;
  }
  return { ref, state };
}

describe('group state as a chain of per-turn records', () => {
  it('stores each turn’s additions only, and reads back the whole state', async () => {
    const store = new FileSystemStore(await mkdtemp(join(tmpdir(), 'clotho-gs-')));
    const { ref, state } = await grow(store, 'r1', 30);
    expect(await loadGroupState(store, ref)).toEqual(state);
    const last = await store.get<{ prev: string; trajectories: Record<number, unknown> }>(ref);
    expect(last.prev).toBe('r1/env/item-0/turn-28/generated');
    expect(last.trajectories[0]).toEqual({
      messages: [{ role: 'assistant', content: 'a29' }],
      tokens: [39],
      masks: [39],
      logprobs: [-0.5],
      state: { n: 30 },
    });
  });

  it('reads a chain from the store when this process has not seen the group, and one record when it has', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-gs-'));
    const { ref, state } = await grow(new FileSystemStore(dir), 'r2', 10);
    const cold = new CountingStore(dir);
    // As another process would: push the group out of this process's cache with 300 other groups.
    for (let g = 0; g < 300; g++) await saveGroupBase(cold, `other${g}/env/item-0/turn-0/prompt`, base());
    cold.reads = 0;
    expect(await loadGroupState(cold, ref)).toEqual(state);
    expect(cold.reads).toBe(11);
    cold.reads = 0;
    expect(await loadGroupState(cold, ref)).toEqual(state);
    expect(cold.reads).toBe(0);
  });

  it('keeps the groups of a run id of several segments apart: each item reads its own newest record', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-gs-'));
    const [a, b] = [await grow(new FileSystemStore(dir), 'team/r3', 3), await grow(new FileSystemStore(dir), 'team/r3b', 3)];
    const store = new CountingStore(dir);
    const items = await Promise.all([0, 1].map((i) => saveGroupBase(store, `team/r3c/env/item-${i}/turn-0/prompt`, base())));
    store.reads = 0;
    for (const ref of [...items, ...items]) await loadGroupState(store, ref);
    expect(store.reads).toBe(0);
    expect(await loadGroupState(store, a.ref)).toEqual(a.state);
    expect(await loadGroupState(store, b.ref)).toEqual(b.state);
  });

  it('keeps a message replaced in a later turn, read from the cache or from the store', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-gs-'));
    const store = new FileSystemStore(dir);
    const { ref, state } = await grow(store, 'r4', 3);
    // What stepTurn does when the environment rewards the answer generate added.
    const next = cloneGroupState(state);
    next.trajectories[0]!.messages[1] = { ...next.trajectories[0]!.messages[1]!, reward: 0.5 };
    next.trajectories[0]!.messages.push({ role: 'user', content: 'again' });
    const stepped = await saveGroupDelta(store, 'r4/env/item-0/turn-3/prompt', ref, state, next);
    const record = await store.get<{ trajectories: Record<number, Record<string, unknown>> }>(stepped);
    expect(record.trajectories[0]).toEqual({
      messages: [{ role: 'user', content: 'again' }],
      replacedMessages: { 1: { role: 'assistant', content: 'a0', reward: 0.5 } },
    });
    expect((await loadGroupState(store, stepped)).trajectories[0]!.messages[1]).toEqual({ role: 'assistant', content: 'a0', reward: 0.5 });
    const cold = new FileSystemStore(dir);
    for (let g = 0; g < 300; g++) await saveGroupBase(cold, `evict${g}/env/item-0/turn-0/prompt`, base());
    expect(await loadGroupState(cold, stepped)).toEqual(next);
  });

  it('hands out copies: growing one leaves the next read as stored, and a message cannot change in place', async () => {
    const store = new FileSystemStore(await mkdtemp(join(tmpdir(), 'clotho-gs-')));
    const { ref, state } = await grow(store, 'r5', 2);
    const read = await loadGroupState(store, ref);
    const t = read.trajectories[0]!;
    t.tokens.push(99);
    t.messages.push({ role: 'user', content: 'extra' });
    (t.state as { n: number }).n = 42;
    expect(() => {
      t.messages[0]!.content = 'changed';
    }).toThrow(TypeError);
    expect(await loadGroupState(store, ref)).toEqual(state);
  });

  it('keeps a saved state as it is, its fields frozen: whoever goes on changes a copy', async () => {
    const store = new FileSystemStore(await mkdtemp(join(tmpdir(), 'clotho-gs-')));
    const { ref, state } = await grow(store, 'r6', 1);
    expect(() => {
      state.trajectories[0]!.completionTokens = 7;
    }).toThrow(TypeError);
    expect(() => state.trajectories[0]!.messages.push({ role: 'user', content: 'late' })).toThrow(TypeError);
    const copy = cloneGroupState(state);
    copy.trajectories[0]!.completionTokens = 7;
    copy.trajectories[0]!.tokens.push(99);
    expect(await loadGroupState(store, ref)).toEqual(state);
  });

  it('reads a whole state written by an older version as is', async () => {
    const store = new FileSystemStore(await mkdtemp(join(tmpdir(), 'clotho-gs-')));
    await store.put('old/env/item-0/turn-0/generated', base());
    expect(await loadGroupState(store, 'old/env/item-0/turn-0/generated')).toEqual(base());
  });
});
