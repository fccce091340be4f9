import { describe, expect, it } from 'vitest';
import type { AtroposGroupResult } from '../schema/atropos.js';
import { initialAtroposProgress, outOfItems, recordAtroposResults } from './atropos-env-run-state.js';

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
      }),
      result({ status: 'declined', reason: 'declined', backlog: [{ n: 1 }] }),
      result({ status: 'declined', reason: 'too_long', dropped: { too_long: 2 } }),
    ]);
    expect(deliveries).toEqual([
      { ref: { key: 'a/group-0' }, size: 2 },
      { ref: { key: 'a/group-1' }, size: 3 },
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
});
