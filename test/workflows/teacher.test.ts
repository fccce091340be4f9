import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startLocalEngine, type RunningLocalEngine } from '../../src/inference/local/start.js';
import { defineEnvironment } from '../../src/env/define.js';
import { createServerManager, type ServerManager } from '../../src/inference/server-manager.js';
import { ServerConfigSchema } from '../../src/config/schemas.js';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { fastSteps, startHarness, type Harness } from '../support/harness.js';
import { uniqueId } from '../support/temporal.js';

let engine: RunningLocalEngine;
let weightsDir: string;
let student: ServerManager;
let teacher: ServerManager;
let harness: Harness | undefined;

beforeAll(async () => {
  // Swaps are taken only from the engine's weights folder (--weights-dir): the version test below swaps a copy in.
  weightsDir = await mkdtemp(join(tmpdir(), 'clotho-teacher-weights-'));
  engine = await startLocalEngine({ model: 'generate:tiny', slots: 4, weightsDir });
  const server = (server_type: 'openai' | 'vllm') =>
    ServerConfigSchema.parse({ base_url: engine.baseUrl, model_name: engine.modelName, server_type, health_check: false });
  student = createServerManager({ servers: [server('openai')] });
  teacher = createServerManager({ servers: [server('vllm')] });
});
afterAll(async () => {
  student?.stop();
  teacher?.stop();
  await engine?.close();
  await rm(weightsDir, { recursive: true, force: true });
});
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A one-turn environment whose groups may ask to skip the teacher. */
const echo = (skip: boolean) =>
  defineEnvironment({
    name: 'echo',
    description: 'say something; every answer scores by its length',
    config: {},
    load: async () => ({ size: 4, get: (i: number) => ({ i }) }),
    prompt: (item) => [{ role: 'user', content: `Say something about the number ${item.i}.` }],
    parse: (completion) => completion.length,
    score: ({ parsed, item }) => (parsed % 2 === item.i % 2 ? 1 : -1),
    groupOverrides: () => (skip ? { skip_teacher_top_k: true } : { teacher_top_k: 3 }),
  });

const run = (h: Harness) =>
  h.temporal.client.workflow.execute(rolloutGroup, {
    taskQueue: h.queues.workflows,
    workflowId: uniqueId('teacher'),
    args: [h.groupInput(1, { groupSize: 2, maxTokenLength: 12, teacherTopK: 5 })],
  });

describe('teacher logprobs on the embedded engine', () => {
  it("adds the teacher's top-k at every position of every sequence, with the group's own top_k", async () => {
    harness = await startHarness({ environment: echo(false), inference: student, teacher });
    const result = await run(harness);
    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    expect(group.group_overrides).toEqual({ teacher_top_k: 3 });
    for (const [i, tokens] of group.tokens.entries()) {
      const ids = group.distill_token_ids![i]!;
      const logprobs = group.distill_logprobs![i]!;
      expect(ids).toHaveLength(tokens.length);
      expect(logprobs).toHaveLength(tokens.length);
      // vLLM's convention: nothing before the first token; then k alternatives, most likely first.
      expect(ids[0]).toEqual([]);
      for (let p = 1; p < tokens.length; p++) {
        expect(ids[p]).toHaveLength(3);
        expect(logprobs[p]!.every((l, k) => l <= 0 && (k === 0 || l <= logprobs[p]![k - 1]!))).toBe(true);
      }
    }
  });

  it('skips the teacher for a group whose overrides say so', async () => {
    harness = await startHarness({ environment: echo(true), inference: student, teacher });
    const result = await run(harness);
    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    expect(group.distill_token_ids).toBeNull();
    expect(group.distill_logprobs).toBeNull();
  });
});

describe("a group's policy version on the embedded engine", () => {
  it("is the engine's weights version in both placements, and the input's from a server that reports none", async () => {
    // The same weights again as version 4: only the version changes, so the teacher tests above are unaffected.
    const copy = join(weightsDir, 'tiny.gguf');
    await copyFile(engine.engine.weights.path, copy);
    const swap = await fetch(`${engine.baseUrl}/weights`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ path: copy, version: 4 }),
    });
    expect(swap.status).toBe(200);
    const placements = { queued: {}, takeTurns: { steps: fastSteps(), oneActivityPerTurn: true } };
    const policyVersions = async (h: Harness) => {
      const versions: Record<string, number | null | undefined> = {};
      for (const [name, placement] of Object.entries(placements)) {
        const result = await h.temporal.client.workflow.execute(rolloutGroup, {
          taskQueue: h.queues.workflows,
          workflowId: uniqueId('policy-version'),
          // The batcher's step when the group started: what vLLM and OpenAI runs record.
          args: [h.groupInput(Object.keys(versions).length, { groupSize: 2, maxTokenLength: 6, policyVersion: 7, ...placement })],
        });
        versions[name] = result.policyVersion;
      }
      return versions;
    };
    harness = await startHarness({ environment: echo(true), inference: student });
    expect(await policyVersions(harness)).toEqual({ queued: 4, takeTurns: 4 });
    await harness.close();
    // The scripted model sends no x-clotho-weights-version.
    harness = await startHarness({ environment: echo(true) });
    expect(await policyVersions(harness)).toEqual({ queued: 7, takeTurns: 7 });
  });
});
