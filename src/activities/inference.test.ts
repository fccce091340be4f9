import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, it, vi } from 'vitest';
import type { Completion, InferenceClient } from '../inference/types.js';
import { readJournal } from '../store/group-journal.js';
import { FileSystemStore } from '../store/trajectory-store.js';
import { loadGroupState, saveGroupBase, type GroupState } from './group-state.js';
import { createInferenceActivities, type GenerateTurnInput, type GenerateTurnResult } from './inference.js';

const prompt = {
  messages: [{ role: 'user', content: 'q' }],
  tokens: [1],
  masks: [-100],
  logprobs: [1],
  completionTokens: 0,
  finishReason: null,
  done: false,
  state: null,
};
const base = (): GroupState => ({
  itemIndex: 0,
  groupOverrides: null,
  tools: null,
  stop: null,
  trajectories: [structuredClone(prompt), structuredClone(prompt)],
});

/** A model that answers `a<i>` to sample i and counts its requests; `down` makes it fail instead. */
function countingModel() {
  const model = { requests: 0, down: false };
  const client: InferenceClient = {
    async generate(request) {
      model.requests++;
      if (model.down) throw new Error('model server down');
      return Array.from({ length: request.n }, (_, i): Completion => ({
        text: `a${i}`,
        message: { role: 'assistant', content: `a${i}` },
        finishReason: 'stop',
        promptTokenIds: [1],
        tokenIds: [10 + i],
        logprobs: [-0.5],
      }));
    },
  };
  return { model, client };
}

/** A fresh store holding a group of two samples before turn `turn`, and that turn's input. */
async function turnOfTwo(turn: number) {
  const store = new FileSystemStore(await mkdtemp(join(tmpdir(), 'clotho-generate-')));
  const state = await saveGroupBase(store, `run/env/item-0/turn-${turn}/prompt`, base());
  const input: GenerateTurnInput = {
    runId: 'run',
    environment: 'env',
    itemIndex: 0,
    turn,
    state,
    sampling: { temperature: 1, topP: 1 },
    maxTokenLength: 64,
    multiTurn: turn > 0,
  };
  return { store, input };
}

// The failure the last call expects is not news.
const quiet = new DefaultLogger('ERROR');

describe('generateTurn', () => {
  it('reads the turn’s checkpoints on a first attempt when local: a crash restarts a local activity at attempt 1', async () => {
    const { store, input } = await turnOfTwo(0);
    const { model, client } = countingModel();
    const { generateTurn } = createInferenceActivities({ inference: () => client, store });
    const at = (info: { isLocal: boolean; attempt: number }): Promise<GenerateTurnResult> =>
      new MockActivityEnvironment(info, { logger: quiet }).run(generateTurn, input);

    // The worker that died had the completions checkpointed; the model is gone now.
    const first = await at({ isLocal: false, attempt: 1 });
    expect(model.requests).toBe(1);
    model.down = true;
    const again = await at({ isLocal: true, attempt: 1 });
    expect(model.requests).toBe(1);
    expect(again.completionTokens).toEqual(first.completionTokens);
    // An activity on the LLM queue keeps its attempt count across workers: attempt 1 has nothing to read.
    await expect(at({ isLocal: false, attempt: 1 })).rejects.toThrow(/model server down/);
    expect(model.requests).toBe(2);
  });

  it('finds a later turn’s checkpoints with one listing: a retry asks only for the samples not yet answered', async () => {
    const { store, input } = await turnOfTwo(1);
    const { model, client } = countingModel();
    // The first request of the turn is answered; the other sample's fails.
    const flaky: InferenceClient = {
      generate: async (request, options) => {
        if (model.requests === 1) {
          model.requests++;
          throw new Error('model server down');
        }
        return client.generate(request, options);
      },
    };
    const { generateTurn } = createInferenceActivities({ inference: () => flaky, store });
    const reads = vi.spyOn(store, 'tryGet');
    const at = (info: { isLocal: boolean; attempt: number }): Promise<GenerateTurnResult> =>
      new MockActivityEnvironment(info, { logger: quiet }).run(generateTurn, input);

    // A first local attempt finds nothing to read, and tries no read to learn it.
    await expect(at({ isLocal: true, attempt: 1 })).rejects.toThrow(/model server down/);
    expect(reads).not.toHaveBeenCalled();
    expect(model.requests).toBe(2);
    // The answered sample's checkpoint is written even though its sibling failed the attempt.
    await vi.waitFor(async () => {
      const journal = readJournal(await readFile(join(store.root, 'run/env/item-0.journal'))).entries;
      expect(journal.has('run/env/item-0/turn-1/sample-0')).toBe(true);
    });
    const retried = await at({ isLocal: false, attempt: 2 });
    expect(model.requests).toBe(3);
    expect(reads).toHaveBeenCalledTimes(1);
    expect(retried.completionTokens).toEqual([1, 1]);
  });

  it('stamps each trajectory with the oldest weights version that generated it, and answers the group’s oldest', async () => {
    const { store, input } = await turnOfTwo(1);
    const { client } = countingModel();
    // Turn 1's two requests are answered by versions 6 and 2 (a swap between them), turn 2's by version 9.
    const versions = [6, 2, 9, 9];
    let prompt = [1];
    const versioned: InferenceClient = {
      generate: async (request, options) =>
        (await client.generate(request, options)).map((c) => ({ ...c, promptTokenIds: prompt, weightsVersion: versions.shift() })),
    };
    const { generateTurn } = createInferenceActivities({ inference: () => versioned, store });
    const run = (i: GenerateTurnInput): Promise<GenerateTurnResult> =>
      new MockActivityEnvironment({}, { logger: quiet }).run(generateTurn, i);
    const trajectoryVersions = async (result: GenerateTurnResult) =>
      (await loadGroupState(store, result.state)).trajectories.map((t) => t.weightsVersion).sort();

    const first = await run(input);
    expect(first.weightsVersion).toBe(2);
    expect(await trajectoryVersions(first)).toEqual([2, 6]);
    prompt = [1, 10];
    const second = await run({ ...input, turn: 2, state: first.state });
    expect(second.weightsVersion).toBe(2);
    expect(await trajectoryVersions(second)).toEqual([2, 6]);

    // A server that reports no version (vLLM, OpenAI) leaves both unset.
    const plain = await turnOfTwo(1);
    const { generateTurn: unversioned } = createInferenceActivities({ inference: () => client, store: plain.store });
    const result: GenerateTurnResult = await new MockActivityEnvironment({}, { logger: quiet }).run(unversioned, plain.input);
    expect('weightsVersion' in result).toBe(false);
    expect((await loadGroupState(plain.store, result.state)).trajectories.map((t) => t.weightsVersion)).toEqual([undefined, undefined]);
  });
});
