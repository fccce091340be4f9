import { appendFile, mkdtemp, readFile, rm, unlink } from 'node:fs/promises';
import { ApplicationFailure } from '@temporalio/common';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imagePart, textPart } from '../kits/images/images.js';
import { encodePng } from '../kits/images/png.js';
import type { Message, ScoredDataGroup } from '../schema/scored-data.js';
import { FileSystemStore } from '../store/trajectory-store.js';
import { saveGroupBase, type GroupState, type Trajectory } from './group-state.js';
import { createTrajectoryActivities } from './trajectories.js';

let root: string;
let store: FileSystemStore;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'clotho-assemble-'));
  store = new FileSystemStore(root);
});
afterAll(() => rm(root, { recursive: true, force: true }));

const png = encodePng({ width: 2, height: 1, data: Uint8Array.from([255, 0, 0, 255, 0, 0, 255, 255]) });
const trajectory = (prompt: Message[], answer: string): Trajectory => ({
  messages: [...prompt, { role: 'assistant', content: answer }],
  tokens: [1, 2, 3],
  masks: [-100, -100, 3],
  logprobs: [1, 1, -0.5],
  completionTokens: 1,
  finishReason: 'stop',
  done: true,
});

async function assemble(itemIndex: number, trajectories: Trajectory[]): Promise<ScoredDataGroup> {
  const state: GroupState = { itemIndex, trajectories, groupOverrides: null, tools: null, stop: null };
  const address = { runId: 'run', environment: 'env', itemIndex };
  const ref = await saveGroupBase(store, `run/env/item-${itemIndex}/prompt`, state);
  const { assembleGroup } = createTrajectoryActivities({ store });
  const result = await assembleGroup({ ...address, state: ref, scores: trajectories.map(() => 1), teacher: null, generationParams: {} });
  return store.get<ScoredDataGroup>(result.group);
}

describe('assembleGroup', () => {
  it("fills `images` with each sequence's image as base64, as Atropos's multimodal environments do", async () => {
    const prompt: Message[] = [{ role: 'user', content: [imagePart(png), textPart('Colour?')] }];
    const group = await assemble(0, [trajectory(prompt, 'red'), trajectory(prompt, 'blue')]);
    expect(group.images).toEqual([png.toString('base64'), png.toString('base64')]);
    // The conversation keeps its image parts unchanged.
    expect(group.messages![0]![0]!.content).toEqual(prompt[0]!.content);
  });

  it('leaves `images` null for text-only groups', async () => {
    const group = await assemble(1, [trajectory([{ role: 'user', content: 'Colour?' }], 'red')]);
    expect(group.images).toBeNull();
  });
});

describe('deliverToJsonl', () => {
  it('writes float fields as Atropos does (Python floats: 1.0, -1.0), whatever JavaScript made of them', async () => {
    const { deliverToJsonl } = createTrajectoryActivities({ store });
    const group = {
      tokens: [[1, 2]],
      masks: [[-100, 2]],
      scores: [1, -1, 0.5, 0.00001, 0],
      advantages: [[0, 2]],
      ref_logprobs: null,
      inference_logprobs: [[1, -0.25]],
      distill_logprobs: [[[0, -1.5]]],
      messages: [[{ role: 'assistant', content: 'scores 1' }]],
    };
    const ref = await store.put('run/env/item-9/group', group);
    const path = join(root, 'floats.jsonl');
    expect(await deliverToJsonl({ path, firstLine: 0, groups: [ref] })).toBe(1);
    const line = (await readFile(path, 'utf8')).trimEnd();
    expect(line).toContain('"scores":[1.0,-1.0,0.5,0.00001,0.0]');
    expect(line).toContain('"advantages":[[0.0,2.0]]');
    expect(line).toContain('"ref_logprobs":null');
    expect(line).toContain('"inference_logprobs":[[1.0,-0.25]]');
    expect(line).toContain('"distill_logprobs":[[[0.0,-1.5]]]');
    // Integers stay integers; the messages' text is untouched.
    expect(line).toContain('"tokens":[[1,2]],"masks":[[-100,2]]');
    expect(JSON.parse(line)).toEqual(group);
  });

  it('refuses a file that lost groups or gained lines since the run wrote it, as a retryable SinkCorrupted naming the way on', async () => {
    const { deliverToJsonl } = createTrajectoryActivities({ store });
    const refs = await Promise.all(
      [0, 1, 2].map((i) => store.put(`run/env/item-${20 + i}/group`, { tokens: [[i]], masks: [[i]], scores: [i] })),
    );
    const path = join(root, 'changed.jsonl');
    await deliverToJsonl({ path, firstLine: 0, groups: refs.slice(0, 2) });
    const refused = async (firstLine: number, groups = refs.slice(2)) => {
      const error = await deliverToJsonl({ path, firstLine, groups }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ApplicationFailure);
      const failure = error as ApplicationFailure;
      expect(failure.type).toBe('SinkCorrupted');
      // Retried, and not soon: a command that sees it stops, and its resume rebuilds the file first.
      expect(failure.nonRetryable).toBe(false);
      expect(failure.nextRetryDelay).toBe('60s');
      expect(failure.message).toContain('--rebuild-output');
      return failure.message;
    };
    // A line appended by hand: the next delivery must not take it for a group of its own.
    await appendFile(path, '{"by":"hand"}\n');
    expect(await refused(2)).toContain(`${path} has 3 lines, but the run had delivered 2 groups to it`);
    await unlink(path);
    expect(await refused(2)).toContain(`${path} has 0 lines, but the run had delivered 2 groups to it`);
  });
});
