import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MASKED, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { counterLog, counterScript, counterTools } from '../support/counter-tools.js';
import { waitFor } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';
import { assistantTurns } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

let harness: Harness | undefined;
beforeEach(() => counterLog.reset());
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('tool calls in a rollout group (real dev server)', () => {
  it('runs each call as its own activity, once, keeping the trajectory state; steps give per-turn rewards and advantages', async () => {
    harness = await startHarness({ environment: counterTools, envConfig: { group_size: 2 }, responder: counterScript });
    const workflowId = uniqueId('tools');
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId,
      args: [harness.groupInput(1, { maxTurns: 8, hooks: { setup: true, teardown: true } })],
    });
    expect(result).toMatchObject({ status: 'scored', turns: 3, toolCalls: 10, scores: [1, 1] });

    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    const tools = group.messages![0]!.filter((m) => m.role === 'tool').map((m) => `${m.name}: ${m.content}`);
    expect(tools).toEqual([
      'add: total 2',
      'add: total 5',
      'divide: Error: division by zero',
      'flaky: ok',
      expect.stringMatching(/^nope: Error: unknown tool "nope"; available: add, divide, flaky, broken, slow, wait, big, quiet$/),
    ]);
    // Per-turn rewards sit on the assistant message of their turn; advantages spread them over that turn's tokens.
    expect(group.messages![0]!.filter((m) => m.role === 'assistant').map((m) => m.reward ?? null)).toEqual([0.5, -0.5, 0.5]);
    const masks = group.masks[0]!;
    const advantages = group.advantages![0]!;
    expect(advantages).toHaveLength(masks.length);
    const firstGenerated = masks.findIndex((m) => m !== MASKED);
    expect(advantages[firstGenerated]).toBe(0.5);
    const secondTurn = masks.findIndex((m, i) => i > firstGenerated && m !== MASKED && masks[i - 1] === MASKED);
    expect(advantages[secondTurn]).toBe(-0.5);
    expect(advantages.at(-1)).toBe(0.5);
    masks.forEach((m, i) => m === MASKED && expect(advantages[i]).toBe(0));
    expect(group.overrides).toBeNull();

    // Side effects ran once per call (no retry repeated them), and the flaky call was retried alone.
    expect(counterLog.adds).toHaveLength(4);
    expect(new Set(counterLog.adds).size).toBe(4);
    expect([...counterLog.flakyAttempts.values()]).toEqual([2, 2]);
    expect(counterLog.setups).toHaveLength(1);
    expect(counterLog.teardowns).toEqual(counterLog.setups);

    // In the history each call is an activity named by what it is, with its arguments and result.
    const history = await harness.temporal.client.workflow.getHandle(workflowId).fetchHistory();
    const scheduled = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callTool');
    expect(scheduled).toHaveLength(10);
    const summaries = scheduled.map((e) => Buffer.from(e.userMetadata?.summary?.data ?? []).toString());
    expect(summaries).toContain('"sample 0: add({\\"x\\":2})"');
    expect(summaries).toContain('"sample 1: divide({\\"a\\":1,\\"b\\":0})"');
    const input = JSON.parse(Buffer.from(scheduled[0]!.activityTaskScheduledEventAttributes!.input!.payloads![0]!.data!).toString());
    expect(input).toMatchObject({ turn: 0, sample: 0, call: 0, name: 'add', arguments: '{"x":2}' });
    const description = await harness.temporal.client.workflow.getHandle(workflowId).describe();
    expect(description.searchAttributes.ClothoTurns).toEqual([3]);
    expect(description.searchAttributes.ClothoToolCalls).toEqual([10]);
  });

  it('runs a turn’s calls as one local activity with the tool step local: the same episode, each call once, no task-queue round trip', async () => {
    harness = await startHarness({ environment: counterTools, envConfig: { group_size: 2 }, responder: counterScript });
    const workflowId = uniqueId('local-tools');
    const input = harness.groupInput(1, { maxTurns: 8, hooks: { setup: true, teardown: true } });
    input.steps.tool = { ...input.steps.tool!, local: true };
    input.steps.generate = { ...input.steps.generate, local: true };
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId,
      args: [input],
    });
    expect(result).toMatchObject({ status: 'scored', turns: 3, toolCalls: 10, scores: [1, 1] });
    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    expect(group.messages![0]!.filter((m) => m.role === 'tool').map((m) => `${m.name}: ${m.content}`)).toEqual([
      'add: total 2',
      'add: total 5',
      'divide: Error: division by zero',
      'flaky: ok',
      expect.stringMatching(/^nope: Error: unknown tool "nope"/),
    ]);
    expect(group.messages![0]!.filter((m) => m.role === 'assistant').map((m) => m.reward ?? null)).toEqual([0.5, -0.5, 0.5]);
    // The flaky call failed once per sample: its local activity ran again, and the calls before it returned their records.
    expect(counterLog.adds).toHaveLength(4);
    expect(new Set(counterLog.adds).size).toBe(4);
    expect([...counterLog.flakyAttempts.values()]).toEqual([2, 2]);

    const events = (await harness.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    // Only the group's hooks (remote steps here) went through a task queue.
    const scheduled = events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(scheduled).toEqual(['setupGroup', 'teardownGroup']);
    const markers = events.filter((e) => e.markerRecordedEventAttributes);
    const summaries = markers
      .map((e) => Buffer.from(e.userMetadata?.summary?.data ?? []).toString())
      .filter((text) => text.includes('sample'));
    expect(summaries).toHaveLength(2);
    expect(summaries[0]).toContain('sample 0: add({\\"x\\":2})');
    expect(summaries[0]).toContain('sample 1:');
  });

  it('gives a local turn the tool step’s timeout for each call a sample makes in order', async () => {
    harness = await startHarness({
      environment: counterTools,
      envConfig: { group_size: 1 },
      responder: (body) => ({
        choices: [
          { text: assistantTurns(body) === 0 ? '<tool_call>{"name": "slow", "arguments": {"ms": 700}}</tool_call>'.repeat(2) : '0' },
        ],
      }),
    });
    const steps = harness.groupInput(0).steps;
    // Either call fits the 1 s timeout; together they do not, so one timeout for the whole turn would fail the group.
    steps.tool = { ...steps.tool, local: true, startToCloseTimeoutMs: 1000, maximumAttempts: 1 };
    steps.generate = { ...steps.generate, local: true };
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('local-tools-timeout'),
      args: [harness.groupInput(0, { maxTurns: 3, steps, hooks: { setup: true, teardown: false } })],
    });
    expect(result).toMatchObject({ status: 'scored', toolCalls: 2 });
    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    expect(group.messages![0]!.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['worked 700 ms', 'worked 700 ms']);
  });

  it('fails the group with the tool’s cause when a tool stays broken, never scoring it, and still tears down', async () => {
    harness = await startHarness({
      environment: counterTools,
      envConfig: { group_size: 1 },
      responder: () => ({ choices: [{ text: '<tool_call>{"name": "broken", "arguments": {}}</tool_call>' }] }),
    });
    const steps = harness.groupInput(0).steps;
    steps.tool = { ...steps.tool, maximumAttempts: 2 };
    const error = await harness.temporal.client.workflow
      .execute(rolloutGroup, {
        taskQueue: harness.queues.workflows,
        workflowId: uniqueId('tools-broken'),
        args: [harness.groupInput(0, { maxTurns: 4, steps, hooks: { setup: true, teardown: true } })],
      })
      .catch((e: unknown) => e as Error);
    const causes: string[] = [];
    for (let c: unknown = error; c instanceof Error; c = (c as { cause?: unknown }).cause) causes.push(c.message);
    expect(causes.join(' | ')).toContain('tool broken failed: tool server unreachable');
    expect(counterLog.teardowns).toEqual(counterLog.setups);
    expect(counterLog.setups).toHaveLength(1);
  });

  it('ends an episode still calling tools at the turn limit as truncated (set_advantage_to_zero), not as an error', async () => {
    harness = await startHarness({
      environment: counterTools,
      envConfig: { group_size: 2 },
      responder: (body) => ({
        choices: Array.from({ length: body.n ?? 1 }, () => ({ text: '<tool_call>{"name": "add", "arguments": {"x": 1}}</tool_call>' })),
      }),
    });
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('tools-truncated'),
      args: [harness.groupInput(2, { maxTurns: 3, hooks: { setup: true, teardown: false } })],
    });
    expect(result).toMatchObject({ status: 'scored', turns: 3, toolCalls: 4 });
    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    expect(group.overrides).toEqual([{ set_advantage_to_zero: true }, { set_advantage_to_zero: true }]);
    expect(counterLog.teardowns).toEqual([]);
  });

  it('lets an async score call the judge model', async () => {
    const asked: string[] = [];
    harness = await startHarness({
      environment: counterTools,
      envConfig: { group_size: 2, judge: true },
      responder: counterScript,
      judge: { complete: async (messages) => (asked.push(String(messages[0]!.content)), ['yes']) },
    });
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('tools-judge'),
      args: [harness.groupInput(3, { maxTurns: 8, hooks: { setup: true, teardown: false } })],
    });
    expect(result.scores).toEqual([1, 1]);
    expect(asked).toEqual(['Is 5 right? Answer yes or no.', 'Is 5 right? Answer yes or no.']);
  });

  it('keeps a heartbeating tool alive past its heartbeat timeout, and the whole of a long result reaches the model only', async () => {
    harness = await startHarness({
      environment: counterTools,
      envConfig: { group_size: 1 },
      responder: (body) => ({
        choices: [
          {
            text:
              assistantTurns(body) === 0
                ? '<tool_call>{"name": "slow", "arguments": {"ms": 1500}}</tool_call><tool_call>{"name": "big", "arguments": {}}</tool_call>'
                : '0',
          },
        ],
      }),
    });
    const steps = harness.groupInput(0).steps;
    steps.tool = { ...steps.tool, heartbeatTimeoutMs: 500, maximumAttempts: 1 };
    const workflowId = uniqueId('tools-heartbeat');
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId,
      args: [harness.groupInput(0, { maxTurns: 3, steps, hooks: { setup: true, teardown: false } })],
    });
    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    expect(group.messages![0]!.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['worked 1500 ms', 'x'.repeat(5000)]);
    const history = await harness.temporal.client.workflow.getHandle(workflowId).fetchHistory();
    const completed = (history.events ?? []).flatMap((e) => {
      const data = e.activityTaskCompletedEventAttributes?.result?.payloads?.[0]?.data;
      return data && data.length > 0 ? [JSON.parse(Buffer.from(data).toString()) as { content?: string }] : [];
    });
    const bigResult = completed.find((r) => r.content?.startsWith('xxx'))!;
    expect(bigResult.content).toBe(`${'x'.repeat(1024)}… (5000 chars)`);
  });

  it('heartbeats for a tool that does not, so that a long call outlives a short heartbeat timeout in one attempt', async () => {
    harness = await startHarness({
      environment: counterTools,
      envConfig: { group_size: 1 },
      responder: (body) => ({
        choices: [{ text: assistantTurns(body) === 0 ? '<tool_call>{"name": "quiet", "arguments": {"ms": 2500}}</tool_call>' : '0' }],
      }),
    });
    const steps = harness.groupInput(0).steps;
    steps.tool = { ...steps.tool, heartbeatTimeoutMs: 1000, maximumAttempts: 1 };
    const workflowId = uniqueId('tools-quiet');
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId,
      args: [harness.groupInput(0, { maxTurns: 2, steps, hooks: { setup: true, teardown: false } })],
    });
    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    expect(group.messages![0]!.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['answered after 2500 ms']);
    expect(counterLog.adds).toHaveLength(1);
    const history = await harness.temporal.client.workflow.getHandle(workflowId).fetchHistory();
    expect(
      (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!.attempt),
    ).not.toContain(2);
  });

  it('lets a tool see its step cancelled when the group is, and still tears the group down', async () => {
    harness = await startHarness({
      environment: counterTools,
      envConfig: { group_size: 1 },
      responder: () => ({ choices: [{ text: '<tool_call>{"name": "wait", "arguments": {}}</tool_call>' }] }),
    });
    const steps = harness.groupInput(0).steps;
    steps.tool = { ...steps.tool, heartbeatTimeoutMs: 2000 };
    const handle = await harness.temporal.client.workflow.start(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('tools-cancel'),
      args: [harness.groupInput(0, { maxTurns: 3, steps, hooks: { setup: true, teardown: true } })],
    });
    await waitFor(() => counterLog.waiting, 30_000, 'the tool to start');
    await handle.cancel();
    await waitFor(() => counterLog.sawCancel, 30_000, 'the tool to see the cancellation');
    await expect(handle.result()).rejects.toThrow();
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    expect(counterLog.teardowns).toEqual(counterLog.setups);
  });
});
