import { describe, expect, it } from 'vitest';
import type { AtroposGroupResult } from '../schema/atropos.js';
import type { AtroposRunHooks } from '../schema/atropos.js';
import {
  batcherDrops,
  evaluationResult,
  initialAtroposProgress,
  keepCheckpoint,
  outOfItems,
  processLogDue,
  recordAtroposResults,
  recordLogged,
  stepChecks,
} from './atropos-env-run-state.js';

const result = (over: Partial<AtroposGroupResult>): AtroposGroupResult => ({
  itemIndex: 0,
  status: 'scored',
  groups: [],
  scores: [],
  dropped: {},
  backlog: [],
  policyVersion: null,
  ...over,
});

describe('an Atropos env-run’s progress', () => {
  it('delivers each kept group with its size, counts declines and filtered groups by reason, and keeps put-back items', () => {
    const progress = initialAtroposProgress();
    const deliveries = recordAtroposResults(progress, [
      result({
        groups: [{ key: 'a/group-0' }, { key: 'a/group-1' }],
        scores: [
          [1, 0],
          [1, 1, 0],
        ],
        dropped: { scores_all_equal: 1 },
        policyVersion: 3,
      }),
      result({ status: 'declined', reason: 'declined', backlog: [{ n: 1 }] }),
      result({ status: 'declined', reason: 'too_long', dropped: { too_long: 2 } }),
    ]);
    expect(deliveries).toEqual([
      { ref: { key: 'a/group-0' }, size: 2, policyVersion: 3 },
      { ref: { key: 'a/group-1' }, size: 3, policyVersion: 3 },
    ]);
    expect(progress).toMatchObject({ completed: 3, scoredGroups: 1, scoreSum: 0.6, backlog: [{ n: 1 }] });
    expect(progress.dropped).toEqual({ scores_all_equal: 1, declined: 1, too_long: 2 });
  });

  it('is out of items only when the iterator is exhausted and nothing was put back', () => {
    const progress = initialAtroposProgress();
    progress.exhausted = true;
    progress.backlog.push('x');
    expect(outOfItems(progress)).toBe(false);
    progress.backlog.length = 0;
    expect(outOfItems(progress)).toBe(true);
  });

  it('names drops for the batcher: Clotho’s reasons where Atropos’s mean the same, declined, the rest filtered', () => {
    const dropped = batcherDrops([
      result({ dropped: { 'identical scores': 2, 'group size 3, expected 4': 1 } }),
      result({ status: 'declined', reason: 'longer than max_token_len 256', dropped: { 'longer than max_token_len 256': 1 } }),
      result({ status: 'declined', reason: 'declined' }),
    ]);
    expect(dropped).toEqual({ scores_all_equal: 2, filtered: 1, too_long: 1, declined: 1 });
  });
});

describe('an Atropos env-run’s hooks', () => {
  const hooks: AtroposRunHooks = { usesCheckpoint: true, checkpointInterval: 2, minGroupsToLog: 2 };

  it('checkpoints when the trainer’s step crosses a multiple of checkpoint_interval, and logs after enough groups', () => {
    const progress = initialAtroposProgress();
    expect(stepChecks(progress, 0, hooks)).toEqual({ checkpoint: null, log: false });
    progress.delivered = 1;
    expect(stepChecks(progress, 1, hooks)).toEqual({ checkpoint: null, log: false });
    progress.delivered = 3;
    // 1 → 5 crosses 2 and 4: one checkpoint, at the multiple last crossed.
    expect(stepChecks(progress, 5, hooks)).toEqual({ checkpoint: 4, log: true });
    recordLogged(progress, 5, { a: 1, b: 2 }, progress.delivered);
    expect(stepChecks(progress, 5, hooks)).toEqual({ checkpoint: null, log: false });
    expect(stepChecks(progress, 6, { ...hooks, usesCheckpoint: false })).toEqual({ checkpoint: null, log: false });
    recordLogged(progress, 6, { b: 3 }, progress.delivered);
    expect(progress.logged).toEqual({ step: 6, metrics: { a: 1, b: 3 } });
  });

  it('logs under process every few groups and once at the end', () => {
    const progress = initialAtroposProgress();
    progress.completed = 1;
    expect(processLogDue(progress, 2, false)).toBe(false);
    expect(processLogDue(progress, 2, true)).toBe(true);
    progress.completed = 2;
    expect(processLogDue(progress, 2, false)).toBe(true);
    recordLogged(progress, null, {}, 2);
    expect(processLogDue(progress, 2, true)).toBe(false);
  });

  it('keeps the newest checkpoint, never one behind it or one with nothing saved', () => {
    const progress = initialAtroposProgress();
    keepCheckpoint(progress, 1, { cursor: 8, data: { iter: 8 } });
    keepCheckpoint(progress, 2, { cursor: 3, data: { iter: 3 } });
    keepCheckpoint(progress, 3, { cursor: 9, data: null });
    expect(progress.checkpoint).toEqual({ cursor: 8, data: { iter: 8 }, step: 1 });
    // Kept in the store by the worker: its key.
    keepCheckpoint(progress, 4, { cursor: 12, data: null, ref: { key: 'run/env/checkpoints/ab' } });
    expect(progress.checkpoint).toEqual({ cursor: 12, data: null, ref: { key: 'run/env/checkpoints/ab' }, step: 4 });
  });

  it('turns an evaluation’s numeric metrics into Clotho’s result', () => {
    const evaluated = { result: null, metrics: { 'eval/percent_correct': 0.5, note: 'x', n: 3 }, logged: null, seconds: 1 };
    expect(evaluationResult(4, evaluated)).toEqual({ step: 4, metrics: { 'eval/percent_correct': 0.5, n: 3 }, percentCorrect: 0.5 });
  });
});
