import { afterEach, describe, expect, it } from 'vitest';
import type { ModelClient } from '../../src/env/define.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { judgedPairs } from '../support/counter-tools.js';
import { startHarness, type Harness } from '../support/harness.js';
import { uniqueId } from '../support/temporal.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A judge whose first `failures` calls fail as an overloaded server does, then answer `votes`. */
function flakyJudge(failures: number, votes: string[]) {
  const asked: string[] = [];
  let calls = 0;
  const judge: ModelClient = {
    async complete(messages, options) {
      calls++;
      if (calls <= failures) throw new Error('judge server answered 503');
      asked.push(String(messages[0]!.content));
      expect(options?.n).toBe(3);
      return votes;
    },
  };
  return { judge, asked, calls: () => calls };
}

describe('the judge step (real dev server)', () => {
  it('asks the judge in its own activity, retrying a transient failure, and scores from its answers', async () => {
    const { judge, asked, calls } = flakyJudge(2, ['\\boxed{A}', '\\boxed{A}', '\\boxed{B}']);
    harness = await startHarness({
      environment: judgedPairs,
      envConfig: { group_size: 2 },
      judge,
      responder: (body) => ({ choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: `answer ${i}` })) }),
    });
    const workflowId = uniqueId('judged');
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId,
      args: [harness.groupInput(0, { judged: true })],
    });
    // Votes 2 of 3 for A: A scores 1/3, B −1/3; rescoreGroup halves both.
    expect(result.scores[0]).toBeCloseTo(1 / 6);
    expect(result.scores[1]).toBeCloseTo(-1 / 6);
    expect(calls()).toBe(3);
    expect(asked).toEqual(['A: answer 0\nB: answer 1\nWhich is better? Answer \\boxed{A} or \\boxed{B}.']);
    const history = await harness.temporal.client.workflow.getHandle(workflowId).fetchHistory();
    const judged = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'judgeGroup');
    expect(judged).toHaveLength(1);
    expect(judged[0]!.activityTaskScheduledEventAttributes!.taskQueue!.name).toBe(harness.queues.llm);
  });

  it('fails the group with the judge’s error when it keeps failing, never scoring it', async () => {
    const { judge } = flakyJudge(100, []);
    harness = await startHarness({ environment: judgedPairs, envConfig: { group_size: 2 }, judge });
    const steps = harness.groupInput(1).steps;
    steps.judge = { ...steps.judge, maximumAttempts: 2 };
    const error = await harness.temporal.client.workflow
      .execute(rolloutGroup, {
        taskQueue: harness.queues.workflows,
        workflowId: uniqueId('judged-down'),
        args: [harness.groupInput(1, { judged: true, steps })],
      })
      .catch((e: unknown) => e as Error);
    const causes: string[] = [];
    for (let c: unknown = error; c instanceof Error; c = (c as { cause?: unknown }).cause) causes.push(c.message);
    expect(causes.join(' | ')).toContain('judge server answered 503');
  });

  it('keeps a slow judge alive past the step’s heartbeat timeout while it reports progress', async () => {
    const judge: ModelClient = {
      async complete(_, options) {
        for (let waited = 0; waited < 1500; waited += 100) {
          options?.onProgress?.();
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(options?.signal?.aborted).toBe(false);
        return ['\\boxed{B}', '\\boxed{B}', '\\boxed{B}'];
      },
    };
    harness = await startHarness({ environment: judgedPairs, envConfig: { group_size: 2 }, judge });
    const steps = harness.groupInput(2).steps;
    steps.judge = { ...steps.judge, heartbeatTimeoutMs: 500, maximumAttempts: 1 };
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('judged-slow'),
      args: [harness.groupInput(2, { judged: true, steps })],
    });
    expect(result.scores).toEqual([-0.5, 0.5]);
  });
});
