import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeFixture } from '../../environments/rlaif/fixture.js';
import rlaif from '../../environments/rlaif/index.js';
import type { ModelClient } from '../../src/env/define.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { activityCounter, startHarness, type Harness } from '../support/harness.js';
import { uniqueId } from '../support/temporal.js';

let dir: string;
let data: string;
let harness: Harness | undefined;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-rlaif-wf-'));
  data = await writeFixture(dir, 'jsonl');
});
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const ANSWERS = ['Call it "Sourdough Sunrise".', 'Call it Bakery.'];

/**
 * A judge server that fails the first `failures` calls of each distinct prompt as an overloaded server does, then
 * prefers the response that mentions sourdough. Counting per prompt keeps the count exact whatever order the
 * group's concurrent requests arrive in.
 */
function flakyJudge(failures: number) {
  const seen = new Map<string, number>();
  let failed = 0;
  const judge: ModelClient = {
    async complete(messages, options) {
      const text = String(messages[1]!.content);
      const calls = (seen.get(text) ?? 0) + 1;
      seen.set(text, calls);
      if (calls <= failures) {
        failed++;
        throw new Error('judge server answered 503');
      }
      const a = text.split('[Response A]')[1]!.split('[Response B]')[0]!.includes('Sourdough');
      return Array.from({ length: options?.n ?? 1 }, () => `\\boxed{${a ? 'A' : 'B'}}`);
    },
  };
  return { judge, failed: () => failed, prompts: () => seen.size };
}

const responder = (body: { n?: number }) => ({ choices: ANSWERS.slice(0, body.n ?? 1).map((text) => ({ text })) });

describe('rlaif on the real dev server', () => {
  it('retries a judge that fails, then scores the pair from its forward and reversed votes', async () => {
    const { judge, failed, prompts } = flakyJudge(1);
    const counter = activityCounter();
    harness = await startHarness({
      environment: rlaif,
      envConfig: { data_path: data, group_size: 2, judge_votes: 2 },
      judge,
      responder,
      wrapActivities: counter.wrap,
    });
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('rlaif'),
      args: [harness.groupInput(0, { judged: true })],
    });
    // The sourdough answer wins all four votes (A forward, B reversed): preference 1 → 0.5, the other 0 → −0.5.
    expect(result.scores).toEqual([0.5, -0.5]);
    expect(result.metrics).toEqual({ votes: 4, unparsed_votes: 0, truncated: 0 });
    expect(prompts()).toBe(2);
    expect(failed()).toBe(2);
    expect(counter.calls.judgeGroup).toBeGreaterThanOrEqual(2);
  });

  it("fails the group with the judge's error when the judge stays down, never scoring it", async () => {
    const { judge, failed } = flakyJudge(Number.POSITIVE_INFINITY);
    const counter = activityCounter();
    harness = await startHarness({
      environment: rlaif,
      envConfig: { data_path: data, group_size: 2 },
      judge,
      responder,
      wrapActivities: counter.wrap,
    });
    const steps = harness.groupInput(1).steps;
    steps.judge = { ...steps.judge!, maximumAttempts: 2 };
    const error = await harness.temporal.client.workflow
      .execute(rolloutGroup, {
        taskQueue: harness.queues.workflows,
        workflowId: uniqueId('rlaif-down'),
        args: [harness.groupInput(1, { judged: true, steps })],
      })
      .catch((e: unknown) => e as Error);
    const causes: string[] = [];
    for (let c: unknown = error; c instanceof Error; c = (c as { cause?: unknown }).cause) causes.push(c.message);
    expect(causes.join(' | ')).toContain('judge server answered 503');
    expect(counter.calls.judgeGroup).toBe(2);
    expect(failed()).toBeGreaterThanOrEqual(2);
    expect(counter.calls.scoreGroup).toBeUndefined();
  });
});
