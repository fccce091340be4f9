import type { temporal } from '@temporalio/proto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TakeTurnsResult } from '../../src/activities/turn.js';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import { TURNS_WINDOW_MS } from '../../src/schema/turns.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { counterLog, counterScript, counterTools } from '../support/counter-tools.js';
import { guessNumber } from '../support/environments.js';
import { activityCounter, fastSteps, startHarness, type Harness } from '../support/harness.js';
import type { Responder } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

let harness: Harness | undefined;
beforeEach(() => counterLog.reset());
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

type Event = temporal.api.history.v1.IHistoryEvent;

/** The default placement, as `clotho process` and `serve` start groups: every step local, turns in takeTurns. */
const defaults = { steps: fastSteps(), oneActivityPerTurn: true };

/** Runs a group to its end; its result and history. */
async function runGroup(h: Harness, input: ReturnType<Harness['groupInput']>) {
  const workflowId = uniqueId('take-turns');
  const result = await h.temporal.client.workflow.execute(rolloutGroup, { taskQueue: h.queues.workflows, workflowId, args: [input] });
  const events = (await h.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return { result, events, workflowId };
}

/** The results of the history's takeTurns markers, in order. */
function takeTurnsResults(events: Event[]): TakeTurnsResult[] {
  return events.flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = JSON.parse(Buffer.from(marker.details!.data!.payloads![0]!.data!).toString()) as { activity_type: string };
    if (data.activity_type !== 'takeTurns') return [];
    return [JSON.parse(Buffer.from(marker.details!.result!.payloads![0]!.data!).toString()) as TakeTurnsResult];
  });
}

/** A responder that counts the requests it answered. */
function counted(responder: Responder): { responder: Responder; requests: () => number } {
  let requests = 0;
  return {
    responder: (...args) => {
      requests++;
      return responder(...args);
    },
    requests: () => requests,
  };
}

describe('an episode’s turns as takeTurns local activities, the default placement (real dev server)', () => {
  it('plays the same episode as one activity per step: each call once, a failed call retried without asking the model again', async () => {
    const model = counted(counterScript);
    const counter = activityCounter();
    harness = await startHarness({
      environment: counterTools,
      envConfig: { group_size: 2 },
      responder: model.responder,
      wrapActivities: counter.wrap,
    });
    const { result, events, workflowId } = await runGroup(
      harness,
      harness.groupInput(1, { maxTurns: 8, hooks: { setup: true, teardown: true }, ...defaults }),
    );
    // What test/workflows/tool-calls.test.ts asserts of the same episode run step by step.
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
    expect(counterLog.adds).toHaveLength(4);
    expect(new Set(counterLog.adds).size).toBe(4);
    // The flaky call failed its first attempt, which failed the activity; its retry read the turn's record and the
    // calls already recorded, so the model was asked each turn's completions once: the first turn's two in one
    // request, then one request a sample in each of the two turns after.
    expect([...counterLog.flakyAttempts.values()]).toEqual([2, 2]);
    expect(counter.calls.takeTurns).toBeGreaterThan(1);
    expect(model.requests()).toBe(5);

    // The history: setup and teardown on the env queue, and otherwise only takeTurns markers, whose results name the
    // turns' calls.
    const scheduled = events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(scheduled).toEqual(['setupGroup', 'teardownGroup']);
    const taken = takeTurnsResults(events);
    expect(taken.reduce((n, t) => n + t.turns, 0)).toBe(3);
    expect(taken.flatMap((t) => t.calls).map((c) => `${c.turn}/${c.sample}/${c.call} ${c.name}(${c.arguments}) ${c.outcome}`)).toContain(
      '0/0/0 add({"x":2}) ok',
    );
    expect(taken.at(-1)!.finished).toMatchObject({ scores: [1, 1] });
    const description = await harness.temporal.client.workflow.getHandle(workflowId).describe();
    expect(description.searchAttributes.ClothoTurns).toEqual([3]);
    expect(description.searchAttributes.ClothoToolCalls).toEqual([10]);
  });

  it('runs a single-turn group as one takeTurns: prepare, generation and finish, 7 history events', async () => {
    const model = counted((body) => ({ choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: i === 0 ? '40' : '7' })) }));
    harness = await startHarness({ environment: guessNumber, envConfig: { group_size: 2 }, responder: model.responder });
    const { result, events } = await runGroup(harness, harness.groupInput(0, defaults));
    expect(result).toMatchObject({ status: 'scored', scores: [1, -1], turns: 1 });
    expect(model.requests()).toBe(1);
    // Started, a workflow task (scheduled, started, completed), the marker, the search attributes, completed.
    expect(events).toHaveLength(7);
    expect(takeTurnsResults(events)).toEqual([
      expect.objectContaining({ turns: 1, next: false, finished: expect.objectContaining({ scores: [1, -1] }) }),
    ]);
  });

  it('takes turns in one activity while TURNS_WINDOW_MS has not passed, then ends it', async () => {
    // Guess-number's model never guesses right: the episode lasts its 3 turns, each call a little over half the window.
    const delayMs = Math.ceil(TURNS_WINDOW_MS * 0.55);
    harness = await startHarness({
      environment: guessNumber,
      envConfig: { group_size: 1 },
      responder: () => ({ delayMs, choices: [{ text: '7' }] }),
    });
    const { result, events } = await runGroup(harness, harness.groupInput(0, { maxTurns: 3, ...defaults }));
    expect(result).toMatchObject({ status: 'scored', turns: 3, scores: [-1] });
    // After one call: another turn; after two, the window has passed and the activity ends. Turns 0–1, then 2.
    expect(takeTurnsResults(events).map((t) => t.turns)).toEqual([2, 1]);
  });
});
