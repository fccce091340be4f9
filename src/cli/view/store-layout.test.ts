import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupKey, saveGroupBase, saveGroupDelta, type GroupState } from '../../activities/group-state.js';
import { FileSystemStore, storeKey } from '../../store/trajectory-store.js';
import { jsonlLine } from '../../schema/float-json.js';
import { findGroupsInStore, listStoredItems, listStoredRuns, readAssembled, readNewestState } from './store-layout.js';

let root: string;
let store: FileSystemStore;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'clotho-view-store-'));
  store = new FileSystemStore(root);
});
afterAll(() => rm(root, { recursive: true, force: true }));

const state = (texts: string[]): GroupState => ({
  itemIndex: 0,
  groupOverrides: null,
  tools: null,
  stop: null,
  trajectories: [
    {
      messages: texts.map((content, i) => ({ role: i % 2 ? 'assistant' : 'user', content })),
      tokens: [],
      masks: [],
      logprobs: [],
      completionTokens: 0,
      finishReason: null,
      done: false,
    },
  ],
});

describe('reading a run from the trajectory store', () => {
  it("lists runs (not the API's or the batcher's folders) and their items, assembled or not", async () => {
    const a = { runId: 'run-a', environment: 'env', itemIndex: 3 };
    await store.put(groupKey(a, 'group'), { scores: [] });
    await store.put(groupKey({ ...a, itemIndex: 10 }, 'parsed'), []);
    await store.put(storeKey('api', 'abc'), { scores: [] });
    await store.put(storeKey('batcher', 'state-x'), {});
    expect(await listStoredRuns(store)).toEqual(['run-a']);
    expect(await listStoredItems(store, 'run-a')).toEqual([
      { ...a, assembled: true },
      { ...a, itemIndex: 10, assembled: false },
    ]);
  });

  it("reads an Atropos item's groups of the newest attempt that wrote any, in order, and older runs' unattempted ones", async () => {
    const a = { runId: 'run-atropos', environment: 'env', itemIndex: 0 };
    // Attempt 1 timed out and wrote after attempt 2 answered: attempt 2's groups are the item's.
    await store.put(groupKey(a, 'attempt-2', 'group-1'), { scores: [2, 1] });
    await store.put(groupKey(a, 'attempt-2', 'group-0'), { scores: [2, 0] });
    await store.put(groupKey(a, 'attempt-1', 'group-0'), { scores: [1, 0] });
    expect(await readAssembled(store, a)).toEqual([{ scores: [2, 0] }, { scores: [2, 1] }]);
    expect(await listStoredItems(store, 'run-atropos')).toEqual([{ ...a, assembled: true }]);
    const older = { ...a, itemIndex: 1 };
    await store.put(groupKey(older, 'group-0'), { scores: [0, 1] });
    expect(await readAssembled(store, older)).toEqual([{ scores: [0, 1] }]);
  });

  it("reads an unassembled group from its newest record: a later turn's prompt after an earlier turn's generation", async () => {
    const address = { runId: 'run-b', environment: 'env', itemIndex: 0 };
    const s0 = state(['hi']);
    const s1 = state(['hi', 'turn 0']);
    const s2 = state(['hi', 'turn 0', 'go on']);
    const s3 = state(['hi', 'turn 0', 'go on', 'turn 1']);
    const r0 = await saveGroupBase(store, groupKey(address, 'turn-0', 'prompt'), s0);
    const r1 = await saveGroupDelta(store, groupKey(address, 'turn-0', 'generated'), r0, s0, s1);
    expect((await readNewestState(store, address))?.trajectories[0]!.messages).toHaveLength(2);
    const r2 = await saveGroupDelta(store, groupKey(address, 'turn-1', 'prompt'), r1, s1, s2);
    // An inference checkpoint of turn 1 comes before its `generated` record and is not a state.
    await store.put(groupKey(address, 'turn-1', 'sample-0'), { text: 'partial' });
    expect((await readNewestState(store, address))?.trajectories[0]!.messages).toHaveLength(3);
    await saveGroupDelta(store, groupKey(address, 'turn-1', 'generated'), r2, s2, s3);
    expect((await readNewestState(store, address))?.trajectories[0]!.messages.at(-1)?.content).toBe('turn 1');
    expect(await readNewestState(store, { ...address, itemIndex: 99 })).toBeUndefined();
  });

  it('finds the JSONL lines that are a stored group, as clotho process writes it, and no others', async () => {
    const group = { scores: [1, -1], tokens: [[1], [2]] };
    const address = { runId: 'run-c', environment: 'env', itemIndex: 7 };
    await store.put(groupKey(address, 'group'), group);
    const same = jsonlLine(group);
    const sameSize = jsonlLine({ scores: [1, -2], tokens: [[1], [2]] });
    const found = await findGroupsInStore(store, [sameSize, same]);
    expect([...found.entries()]).toEqual([[1, address]]);
    // A JSONL written before scores were floats: the same group.
    expect([...(await findGroupsInStore(store, [JSON.stringify(group)])).entries()]).toEqual([[0, address]]);
  });
});
