import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupKey, saveGroupBase } from '../../activities/group-state.js';
import { FileSystemStore } from '../../store/trajectory-store.js';
import { callRecord, harnessOutcome, harnessTrajectory, writeHarnessRollout } from '../../../test/support/harness-records.js';
import { readHarnessSample, readHarnessSamples, readHarnessState } from './harness.js';

let root: string;
let store: FileSystemStore;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'clotho-view-harness-'));
  store = new FileSystemStore(root);
});
afterAll(() => rm(root, { recursive: true, force: true }));

const calls = (n: number) => Array.from({ length: n }, (_, k) => callRecord(k, `user: step ${k}`, `reply ${k}`));
const marks = (sample: { calls: { mark: string }[] } | null) => sample?.calls.map((c) => c.mark);

describe("reading a harness rollout's calls from the store", () => {
  it('marks the calls a retried attempt answered from the record as replayed, the rest live, by the outcome', async () => {
    const address = { runId: 'h1', environment: 'bugfix', itemIndex: 0 };
    const outcome = harnessOutcome({
      calls: 4,
      replayed: 2,
      diverged: [{ call: 2, reason: 'message 3 differs (5 messages, 5 recorded)' }],
    });
    // A call-4 left by the attempt that died is not one of the rollout's.
    await writeHarnessRollout(store, address, 0, calls(5), { outcome });
    const sample = await readHarnessSample(store, address, 0);
    expect(sample?.outcome).toEqual(outcome);
    expect(marks(sample)).toEqual(['replayed', 'replayed', 'live', 'live']);
    expect(sample?.calls[1]).toEqual({
      call: 1,
      mark: 'replayed',
      summary: 'user: step 1',
      promptTokens: 150,
      completionTokens: 2,
      modelMs: 20,
      reply: 'reply 1',
    });
  });

  it("marks a running rollout's calls: a first attempt's live, a retry's by its heartbeat, those past it unknown", async () => {
    const address = { runId: 'h2', environment: 'bugfix', itemIndex: 0 };
    await writeHarnessRollout(store, address, 1, calls(3));
    // The heartbeat lags the records (the SDK throttles it): a first attempt has nothing to replay, so all are live.
    const progress = { calls: 2, replayed: 1 };
    expect(marks(await readHarnessSample(store, address, 1, { attempt: 1, progress: { calls: 1, replayed: 0 } }))).toEqual([
      'live',
      'live',
      'live',
    ]);
    expect(marks(await readHarnessSample(store, address, 1, { attempt: 2, progress }))).toEqual(['replayed', 'live', 'recorded']);
    expect(marks(await readHarnessSample(store, address, 1, { attempt: 2 }))).toEqual(['recorded', 'recorded', 'recorded']);
    expect(marks(await readHarnessSample(store, address, 1))).toEqual(['recorded', 'recorded', 'recorded']);
    expect(await readHarnessSample(store, address, 0)).toBeNull();
    expect((await readHarnessSamples(store, address)).map((s) => s.sample)).toEqual([1]);
    expect(await readHarnessSamples(store, { ...address, runId: 'none' })).toEqual([]);
  });

  it("reads an unassembled harness group's state: each finished rollout's trajectory, then the gathered state", async () => {
    const address = { runId: 'h3', environment: 'bugfix', itemIndex: 2 };
    expect(await readHarnessState(store, address)).toBeUndefined();
    const trajectory = harnessTrajectory([
      { role: 'user', content: 'fix it' },
      { role: 'assistant', content: 'done' },
    ]);
    await writeHarnessRollout(store, address, 1, calls(1), { outcome: harnessOutcome({ calls: 1 }), trajectory });
    const running = await readHarnessState(store, address);
    expect(running?.trajectories.map((t) => t.messages.length)).toEqual([0, 2]);
    await saveGroupBase(store, groupKey(address, 'harness', 'gathered'), { ...running!, trajectories: [trajectory, trajectory] });
    expect((await readHarnessState(store, address))?.trajectories.map((t) => t.messages.length)).toEqual([2, 2]);
  });

  it('names the record and field of a record it cannot read', async () => {
    const address = { runId: 'h4', environment: 'bugfix', itemIndex: 0 };
    await store.put(groupKey(address, 'harness', 'sample-0', 'call-0'), { call: 0, summary: 'user: hi' });
    await expect(readHarnessSample(store, address, 0)).rejects.toThrow('h4/bugfix/item-0/harness/sample-0/call-0: promptTokens');
  });
});
