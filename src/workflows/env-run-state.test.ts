import { describe, expect, it } from 'vitest';
import { progressLine } from '../cli/progress.js';
import { initialProgress, nextItemWait, recordFinished, recordResult, roomForGroups } from './env-run-state.js';
import { payloadTooLarge } from './env-run-strategy.js';
import { rolloutGroupOptions, timedOutGroup } from './rollout-children.js';

const room = (queuedGroups: number, receivedGroups: number) => ({ version: 1, currentStep: 0, batchSize: 8, queuedGroups, receivedGroups });

describe('roomForGroups (Atropos backpressure)', () => {
  it('allows max_batches_offpolicy batches of the env groups, in groups', () => {
    // 2 batches × 8 sequences / groups of 4 = 4 groups.
    expect(roomForGroups(room(0, 0), 0, 0, 2, 4)).toBe(4);
    expect(roomForGroups(room(3, 3), 3, 0, 2, 4)).toBe(1);
    // A group larger than the batch still gets one batch's worth.
    expect(roomForGroups(room(0, 0), 0, 0, 1, 16)).toBe(1);
  });

  it('counts groups delivered but not yet received, running, and finished but not yet delivered', () => {
    // Delivered 3, the batcher has seen 1 of them: 2 on their way, 1 queued; 1 pending here.
    expect(roomForGroups(room(1, 1), 3, 1, 2, 4)).toBe(0);
    expect(roomForGroups(room(1, 1), 3, 0, 2, 4)).toBe(1);
    expect(roomForGroups(room(5, 5), 5, 3, 2, 4)).toBe(0);
  });

  it('gives an env that shares the batcher its weighted share, rounded up, so the shares always fill a batch', () => {
    // 1 batch × 8 sequences / groups of 2 = 4 groups, split 2:1: ceil(8/3) = 3 and ceil(4/3) = 2.
    const shared = (share: number) => ({ ...room(0, 0), share });
    expect(roomForGroups(shared(2 / 3), 0, 0, 1, 2)).toBe(3);
    expect(roomForGroups(shared(1 / 3), 0, 0, 1, 2)).toBe(2);
    expect(roomForGroups({ ...shared(1 / 3), queuedGroups: 1, receivedGroups: 1 }, 1, 1, 1, 2)).toBe(0);
    // A lone env's share is 1: the whole room, as without weights.
    expect(roomForGroups(shared(1), 0, 0, 2, 4)).toBe(4);
    // A room without a share (an env registered with no positive weight): the whole room.
    expect(roomForGroups(room(0, 0), 0, 0, 1, 2)).toBe(4);
  });
});

describe('recordResult', () => {
  it('sums each environment metric over scored groups, and the progress line shows their means', () => {
    const progress = initialProgress();
    const group = { itemIndex: 0, status: 'scored' as const, scores: [1, -1], groupSize: 2, tokens: 10, turns: 3 };
    recordResult(progress, { ...group, meanScore: 0, metrics: { tool_calls: 4, correct: 0.5 } });
    recordResult(progress, { ...group, meanScore: 1, metrics: { tool_calls: 2, correct: 1 } });
    recordResult(progress, { ...group, meanScore: 1 });
    expect(progress.metricSums).toEqual({ tool_calls: 6, correct: 1.5 });
    const line = progressLine({ ...progress, total: 3, inFlight: 0 }, 1000, 0);
    expect(line).toContain('mean score 0.667 · tool_calls 2.000 · correct 0.500 · failed 0');
  });
});

describe('groups past their deadline (worker_timeout)', () => {
  it('count as dropped with reason timeout, in no score, and are not delivered', () => {
    const progress = initialProgress();
    const scored = {
      itemIndex: 0,
      status: 'scored' as const,
      scores: [1, -1],
      meanScore: 0.5,
      groupSize: 2,
      tokens: 10,
      turns: 1,
      group: { key: 'g0' },
    };
    const { kept, dropped } = recordFinished(progress, [scored, timedOutGroup(1, 2, null)]);
    expect(kept.map((r) => r.itemIndex)).toEqual([0]);
    expect(dropped).toEqual({ timeout: 1 });
    expect(progress).toMatchObject({ completed: 2, failed: 0, scoredGroups: 1, scoreSum: 0.5, dropped: { timeout: 1 } });
  });

  it('set the child deadline only when the env-run input has one', () => {
    const input = { runId: 'r', environment: 'e', searchAttributes: false };
    expect(rolloutGroupOptions(input, 3, undefined)).not.toHaveProperty('workflowExecutionTimeout');
    expect(rolloutGroupOptions({ ...input, groupTimeoutSeconds: 60 }, 3, undefined).workflowExecutionTimeout).toBe(60_000);
    expect(rolloutGroupOptions(input, 3, '0.2.0').memo).toEqual({ clothoVersion: '0.2.0' });
  });

  it('waits for items 1 s, then twice as long after each empty answer, up to a minute', () => {
    const policy = { initialMs: 1000, maximumMs: 60_000 };
    const waits: number[] = [];
    let last: number | null = null;
    for (let i = 0; i < 8; i++) waits.push((last = nextItemWait(policy, last)));
    expect(waits).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
  });

  it('fails, naming the value, its size and the budget, when a value past the payload budget would enter history', () => {
    expect(() => payloadTooLarge({ backlog: ['x'.repeat(1000)] }, 'the input')).not.toThrow();
    expect(() => payloadTooLarge({ backlog: ['x'.repeat(600_000)] }, 'the input it continues as new with')).toThrow(
      /^the input it continues as new with is 600016 bytes of JSON, past the payload budget of 524288 /,
    );
  });
});
