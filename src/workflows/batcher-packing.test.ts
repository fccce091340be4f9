import { describe, expect, it } from 'vitest';
import {
  findGroupsSummingToTarget,
  formBatches,
  formExactBatches,
  grabExact,
  grabWithMinimumAllocations,
  type PackEnv,
} from './batcher-packing.js';

const groups = (sizes: number[], envId: number | null = null) => sizes.map((size, position) => ({ size, envId, position }));
const positions = (batches: { position: number }[][]) => batches.map((b) => b.map((g) => g.position));
const env = (id: number, min: number | null, connected = true): PackEnv => ({
  registered_id: id,
  connected,
  min_batch_allocation: min,
});

describe('findGroupsSummingToTarget', () => {
  it('skips a group that overshoots and keeps filling first in, first out', () => {
    expect(findGroupsSummingToTarget([2, 3, 1, 1], 4)).toEqual([0, 2, 3]);
  });

  it('backtracks the subset sum from the latest usable group', () => {
    // Greedy is stuck at 3+1; of the exact subsets (3+2 twice, 1+2+2) backtracking from the end finds 1+2+2.
    expect(findGroupsSummingToTarget([3, 1, 2, 2], 5)).toEqual([1, 2, 3]);
  });
});

describe('grabExact', () => {
  it('uses small groups only once they fill a pack of the largest size', () => {
    // Largest size 4: the three 1s never complete a pack, the two 2s do (completing at position 3).
    const queue = groups([1, 2, 1, 2, 1, 4]);
    expect(grabExact(queue, 8)).toEqual([1, 3, 5]);
    expect(grabExact(queue, 12)).toBeNull();
  });

  it('never uses a size that does not divide the largest', () => {
    expect(grabExact(groups([3, 3, 4, 4]), 8)).toEqual([2, 3]);
    expect(grabExact(groups([3, 4]), 7)).toBeNull();
  });

  it('may take half a pack when the batch size is not a multiple of the largest size', () => {
    expect(grabExact(groups([1, 1, 1, 1, 4]), 2)).toEqual([0, 1]);
  });

  it('forms nothing when walking packs overshoots the batch size', () => {
    expect(grabExact(groups([4, 4]), 6)).toBeNull();
  });
});

describe('formExactBatches', () => {
  it('forms every batch at once, each a run of packs in completion order', () => {
    const { batches, rest } = formExactBatches(groups([2, 4, 2, 4, 4, 2]), 4);
    expect(positions(batches)).toEqual([[1], [0, 2], [3], [4]]);
    expect(rest.map((g) => g.position)).toEqual([5]);
  });

  it('repacks to the next largest size once the largest groups are used up', () => {
    // While the 8 is queued the 4 and the 2s make no pack of 8; once it is served they pack to 4.
    const { batches, rest } = formExactBatches(groups([4, 8, 2, 2, 2]), 8);
    expect(positions(batches)).toEqual([[1], [0, 2, 3]]);
    expect(rest.map((g) => g.position)).toEqual([4]);
    expect(positions(formExactBatches(groups([8, 2, 2, 2, 2, 2, 2]), 8).batches)).toEqual([[0], [1, 2, 3, 4]]);
  });

  it('matches repeated single grabs when the batch size cuts packs', () => {
    const queue = groups([1, 1, 1, 1, 1, 1, 1, 1, 4]);
    const { batches } = formExactBatches(queue, 3);
    // Each grab re-buckets what is left, so the cut packs regroup: 3+3 from the 1s, then nothing.
    expect(positions(batches)).toEqual([
      [0, 1, 2],
      [3, 4, 5],
    ]);
  });
});

describe('grabWithMinimumAllocations', () => {
  it('fills minimums env by env in pack order, then the rest in queue order', () => {
    // Env 1's minimum (2 of 8) comes first, from its first completed pack; then queue order.
    const queue = [
      { size: 2, envId: 0 },
      { size: 2, envId: 0 },
      { size: 1, envId: 1 },
      { size: 2, envId: 1 },
      { size: 1, envId: 1 },
      { size: 2, envId: 0 },
    ];
    expect(grabWithMinimumAllocations(queue, 8, [env(0, null), env(1, 0.25)])).toEqual([3, 0, 1, 2, 4]);
  });

  it('never uses groups without an env id', () => {
    const queue = [
      { size: 2, envId: null },
      { size: 2, envId: 0 },
      { size: 2, envId: null },
      { size: 2, envId: 0 },
    ];
    expect(grabWithMinimumAllocations(queue, 4, [env(0, 0.5)])).toEqual([1, 3]);
    expect(grabWithMinimumAllocations(queue, 6, [env(0, 0.5)])).toBeNull();
  });

  it('packs per env: halves of two envs do not make a pack', () => {
    const queue = [
      { size: 1, envId: 0 },
      { size: 1, envId: 1 },
      { size: 2, envId: 0 },
    ];
    expect(grabWithMinimumAllocations(queue, 2, [env(0, 0.5)])).toEqual([2]);
  });
});

describe('formBatches', () => {
  it('uses the exact rule when only disconnected envs have minimums', () => {
    const queue = groups([2, 2], null);
    expect(positions(formBatches(queue, 4, [env(0, 0.5, false)]).batches)).toEqual([[0, 1]]);
    // With the env connected, groups without an env are unusable.
    expect(formBatches(queue, 4, [env(0, 0.5)]).batches).toEqual([]);
  });

  it('forms every minimum-allocation batch until one env blocks', () => {
    const queue = [0, 1, 0, 1, 1, 1].map((envId, position) => ({ size: 2, envId, position }));
    const { batches, rest } = formBatches(queue, 4, [env(0, 0.5), env(1, null)]);
    expect(positions(batches)).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(rest.map((g) => g.position)).toEqual([4, 5]);
  });

  it('forms nothing for a batch size that is not positive', () => {
    expect(formBatches(groups([1, 1]), 0, []).batches).toEqual([]);
    expect(formBatches([{ size: 1, envId: 0 }], -1, [env(0, 0.5)]).batches).toEqual([]);
  });
});
