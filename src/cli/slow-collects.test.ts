import { describe, expect, it } from 'vitest';
import { collectHeartbeatLines, isSlow, slowSummary, type SlowCollect } from './slow-collects.js';

const slow = (over: Partial<SlowCollect>): SlowCollect => ({
  workflowId: 'clotho/r/env/item-3',
  itemIndex: 3,
  runningMs: 412_000,
  usualMs: 3_100,
  attempt: 1,
  heartbeat: { seconds: 412 },
  ...over,
});

describe('collects far past the usual', () => {
  it('counts one slow past 5× the median and 30 s, or past 10 minutes while the median is not known', () => {
    expect(isSlow(16_000, 3_000)).toBe(false);
    expect(isSlow(31_000, 3_000)).toBe(true);
    expect(isSlow(60_000, 20_000)).toBe(false);
    expect(isSlow(101_000, 20_000)).toBe(true);
    expect(isSlow(599_000, null)).toBe(false);
    expect(isSlow(601_000, null)).toBe(true);
  });

  it('says on the progress line how long the longest has run, where its worker is when it says, and how many more', () => {
    // A worker that heartbeats only its seconds: no place to show.
    expect(slowSummary([slow({})])).toBe('item 3: collect running 412 s (usual 3.1 s)');
    const stack = { seconds: 412, stack: ['env.py:40 in collect_trajectories', 'env.py:88 in score'], lastOutput: ['x'] };
    expect(slowSummary([slow({ runningMs: 40_000, itemIndex: 5 }), slow({ heartbeat: stack, attempt: 2 })])).toBe(
      'item 3: collect running 412 s (usual 3.1 s), attempt 2 · at env.py:88 in score (+1 more)',
    );
    expect(slowSummary([slow({ usualMs: null, heartbeat: { seconds: 1, lastOutput: ['scoring item 3', ''] } })])).toBe(
      'item 3: collect running 412 s · last output "scoring item 3"',
    );
    expect(slowSummary([])).toBe('');
  });

  it("shows a running collect's heartbeat in inspect, with what the worker sends", () => {
    expect(collectHeartbeatLines({ seconds: 4.25 })).toEqual(['heartbeat: collect running 4.3 s']);
    expect(collectHeartbeatLines({ fastForwarded: 3 })).toEqual([]);
  });
});
