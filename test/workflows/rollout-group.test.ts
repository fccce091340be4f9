import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadGroupState } from '../../src/activities/group-state.js';
import { FileSystemStore } from '../../src/store/trajectory-store.js';
import { MASKED, MASKED_LOGPROB, SCORED_DATA_FIELDS, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { guessNumber } from '../support/environments.js';
import { activityCounter, startHarness, type Harness } from '../support/harness.js';
import { defaultLogprob, encodeChat, encodeCompletion, openAIError } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const run = (h: Harness, input: ReturnType<Harness['groupInput']>, workflowId = uniqueId('rg')) =>
  h.temporal.client.workflow.execute(rolloutGroup, { taskQueue: h.queues.workflows, workflowId, args: [input] });

/**
 * A harness for guess-number groups of 2 whose model answers 503 to its first `failures` requests, then 40 and 7 (item
 * 0's secret is 40) after `delayMs`; activity calls counted.
 */
async function startOverloadedGuess(failures: number, delayMs = 0) {
  const counter = activityCounter();
  const model = { calls: 0 };
  const h = await startHarness({
    environment: guessNumber,
    envConfig: { group_size: 2 },
    wrapActivities: counter.wrap,
    responder: (body) => {
      if (++model.calls <= failures) return { status: 503, body: openAIError('overloaded', 503) };
      return { delayMs, choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: i === 0 ? '40' : '7' })) };
    },
  });
  harness = h;
  return { h, counter, model };
}

describe('rolloutGroup on a real dev server', () => {
  it('retries a step that fails twice alone, and every other step runs once', async () => {
    const { h, counter, model } = await startOverloadedGuess(2);
    const result = await run(h, h.groupInput(0));
    expect(result.status).toBe('scored');
    expect(result.scores).toEqual([1, -1]);
    expect(counter.calls).toEqual({ prepareGroup: 1, generateTurn: 3, finishGroup: 1 });
    expect(model.calls).toBe(3);
  });

  it('runs generation as a local activity when configured: retried in the worker, one workflow task for the group', async () => {
    const { h, counter } = await startOverloadedGuess(1);
    const input = h.groupInput(0);
    input.steps.generate = { ...input.steps.generate, local: true };
    const workflowId = uniqueId('rg-local-generate');
    const result = await h.temporal.client.workflow.execute(rolloutGroup, { taskQueue: h.queues.workflows, workflowId, args: [input] });
    expect(result).toMatchObject({ status: 'scored', scores: [1, -1] });
    expect(counter.calls).toEqual({ prepareGroup: 1, generateTurn: 2, finishGroup: 1 });
    const events = (await h.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
    expect(events.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
    const locals = events.flatMap((e) => (e.markerRecordedEventAttributes?.markerName === 'core_local_activity' ? [e] : []));
    expect(locals).toHaveLength(3);
    expect(events).toHaveLength(9);
  });

  it('keeps a local generation longer than the workflow task timeout alive: the task is heartbeaten, the model asked once', async () => {
    const { h, model } = await startOverloadedGuess(0, 3000);
    const input = h.groupInput(0);
    input.steps.generate = { ...input.steps.generate, local: true };
    const workflowId = uniqueId('rg-long-local');
    const result = await h.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: h.queues.workflows,
      workflowId,
      args: [input],
      workflowTaskTimeout: '1s',
    });
    expect(result).toMatchObject({ status: 'scored', scores: [1, -1] });
    expect(model.calls).toBe(1);
    const events = (await h.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    expect(events.filter((e) => e.workflowTaskTimedOutEventAttributes || e.workflowTaskFailedEventAttributes)).toEqual([]);
    // The SDK completes the task at 80 % of its timeout while the call runs, and takes the next at once.
    expect(events.filter((e) => e.workflowTaskCompletedEventAttributes).length).toBeGreaterThanOrEqual(3);
  });

  it('finishes in 14 events with no patch marker: parse, score and assemble are one finishGroup', async () => {
    const { h } = await startOverloadedGuess(0);
    const eventsOf = async (input: ReturnType<Harness['groupInput']>) => {
      const workflowId = uniqueId('rg-finish');
      expect(await run(h, input, workflowId)).toMatchObject({ status: 'scored', scores: [1, -1] });
      const events = (await h.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
      return { count: events.length, patches: events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length };
    };
    expect(await eventsOf(h.groupInput(0))).toEqual({ count: 14, patches: 0 });
  });

  it('retries a first turn that failed after its completions arrived without asking the model again', async () => {
    const counter = activityCounter();
    let generateCalls = 0;
    let failed = false;
    // The turn's state record fails once: the completions, asked for in one request, are already checkpointed.
    class FlakyStore extends FileSystemStore {
      override async put(key: string, value: unknown) {
        if (!failed && key.endsWith('/turn-0/generated')) {
          failed = true;
          throw new Error('disk hiccup');
        }
        return super.put(key, value);
      }
    }
    harness = await startHarness({
      environment: guessNumber,
      envConfig: { group_size: 2 },
      wrapActivities: counter.wrap,
      store: new FlakyStore(await mkdtemp(join(tmpdir(), 'clotho-flaky-store-'))),
      responder: (body) => {
        generateCalls++;
        return { choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: i === 0 ? '40' : '7' })) };
      },
    });
    const result = await run(harness, harness.groupInput(0));
    expect(failed).toBe(true);
    expect(counter.calls.generateTurn).toBe(2);
    expect(generateCalls).toBe(1);
    expect(result.scores).toEqual([1, -1]);
  });

  it('plays a multi-turn episode, growing each sequence token by token with only model tokens unmasked', async () => {
    // Sample 0 guesses 50, then 45 (right for item 5: secret 45); sample 1 always says 10.
    harness = await startHarness({
      environment: guessNumber,
      envConfig: { group_size: 2 },
      responder: (body) => {
        const messages = ('messages' in body ? body.messages : []) as { role: string; content?: unknown }[];
        const turns = messages.filter((m) => m.role === 'assistant').length;
        const first = String(messages.find((m) => m.role === 'assistant')?.content ?? '');
        const n = body.n ?? 1;
        if (turns === 0) return { choices: Array.from({ length: n }, (_, i) => ({ text: i === 0 ? '50' : '10' })) };
        return { choices: [{ text: first === '50' ? '45' : '10' }] };
      },
    });
    const result = await run(harness, harness.groupInput(5, { maxTurns: 4 }));
    expect(result.status).toBe('scored');
    expect(result.scores).toEqual([1, -1]);
    expect(result.turns).toBe(4);

    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    const conversation = group.messages![0]!.map((m) => ({ role: m.role, content: m.content }));
    expect(conversation.map((m) => `${m.role}:${m.content}`)).toEqual([
      'user:Guess my number between 0 and 100. Answer with a number.',
      'assistant:50',
      'user:lower',
      'assistant:45',
    ]);
    // The whole conversation, tokenized as the server does, is the sequence; only the assistant's tokens train.
    expect(group.tokens[0]).toEqual(encodeChat(conversation, false));
    const trained = group.masks[0]!.flatMap((m, i) => (m === MASKED ? [] : [group.tokens[0]![i]]));
    expect(trained).toEqual([...encodeCompletion('50'), ...encodeCompletion('45')]);
    group.masks[0]!.forEach((m, i) => {
      expect(group.inference_logprobs![0]![i]).toBe(m === MASKED ? MASKED_LOGPROB : defaultLogprob(m));
      if (m !== MASKED) expect(m).toBe(group.tokens[0]![i]);
    });
    // Sample 1 never guesses right: it takes every turn it is allowed.
    expect(group.messages![1]!.filter((m) => m.role === 'assistant')).toHaveLength(4);
  });

  it('fails the group visibly when inference is rejected, and never scores it', async () => {
    const counter = activityCounter();
    harness = await startHarness({
      environment: guessNumber,
      envConfig: { group_size: 2 },
      wrapActivities: counter.wrap,
      responder: () => ({ status: 400, body: openAIError('max_tokens is too large for this model', 400) }),
    });
    const workflowId = uniqueId('rg-rejected');
    const error = await harness.temporal.client.workflow
      .execute(rolloutGroup, { taskQueue: harness.queues.workflows, workflowId, args: [harness.groupInput(0)] })
      .catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    let cause: unknown = error;
    const messages: string[] = [];
    while (cause instanceof Error) {
      messages.push(cause.message);
      cause = (cause as { cause?: unknown }).cause;
    }
    expect(messages.join(' | ')).toContain('max_tokens is too large for this model');
    expect(counter.calls.generateTurn).toBe(1);
    expect(counter.calls.finishGroup).toBeUndefined();
    // In the Temporal UI: a failed workflow, found with ClothoStatus = "failed", and no score.
    const description = await harness.temporal.client.workflow.getHandle(workflowId).describe();
    expect(description.status.name).toBe('FAILED');
    expect(description.searchAttributes.ClothoStatus).toEqual(['failed']);
    expect(description.searchAttributes.ClothoMeanScore).toBeUndefined();
  });

  it('carries 16 sequences × 32,768 tokens with logprobs through the store, not through Temporal', async () => {
    const length = 32_768;
    harness = await startHarness({
      environment: guessNumber,
      envConfig: { group_size: 16, max_token_length: length + 16 },
      responder: (body) => ({
        choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({
          text: String(40 + i),
          tokenIds: Array.from({ length }, (_, t) => 100 + ((t * 7 + i) % 5000)),
          logprobs: Array.from({ length }, (_, t) => -((t % 97) + 1) / 64),
        })),
      }),
    });
    const workflowId = uniqueId('rg-big');
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId,
      args: [harness.groupInput(0, { groupSize: 16, maxTokenLength: length + 16 })],
    });
    expect(result.status).toBe('scored');
    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    expect(Object.keys(group)).toEqual(SCORED_DATA_FIELDS);
    expect(group.tokens).toHaveLength(16);
    for (const [i, tokens] of group.tokens.entries()) {
      expect(tokens.length).toBeGreaterThan(length);
      expect(group.inference_logprobs![i]).toHaveLength(tokens.length);
    }
    const description = await harness.temporal.client.workflow.getHandle(workflowId).describe();
    // ~1M numbers went through the workflow; its whole history stays tiny because only references travel.
    expect(description.historySize).toBeLessThan(64 * 1024);
    const state = await loadGroupState(harness.store, `${harness.runId}/guess-number/item-0/turn-0/generated`);
    expect(state.trajectories[15]!.completionTokens).toBe(length);
  });
});
