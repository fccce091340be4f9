import { describe, expect, it } from 'vitest';
import {
  findGroupsSummingToTarget,
  formBatches,
  grabExact,
  grabWithMinimumAllocations,
  type PackEnv,
  type Packable,
} from './batcher-packing.js';

// Atropos's own test cases (atroposlib/tests/test_utils), re-derived as behaviour, plus outputs that
// Atropos's packing code produced for fixed queues, which Clotho must reproduce group for group.

/** A deterministic pseudo-random source (mulberry32), so the 10,000 trials are the same every run. */
function random(seed: number): (n: number) => number {
  let a = seed;
  return (n) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

const group = (size: number, envId: number | null = null): Packable => ({ size, envId });
const env = (id: number, min: number | null, connected = true): PackEnv => ({
  registered_id: id,
  connected,
  min_batch_allocation: min,
});
const sequences = (items: readonly Packable[], indices: readonly number[]) =>
  indices.reduce((sum, i) => sum + (items[i] as Packable).size, 0);
const perEnv = (items: readonly Packable[], indices: readonly number[]) => {
  const counts: Record<string, number> = {};
  for (const i of indices) {
    const item = items[i] as Packable;
    counts[String(item.envId)] = (counts[String(item.envId)] ?? 0) + item.size;
  }
  return counts;
};

describe('heterogeneous batching (test_heterogeneous_batching)', () => {
  it('forms a batch of exactly bs from groups of 8 whenever enough are queued, over 10,000 random trials', () => {
    const next = random(1);
    for (let trial = 0; trial < 10_000; trial++) {
      const batchSize = 64 * (1 + next(20));
      const queue = Array.from({ length: 1 + next(100) }, () => group(8));
      const batch = grabExact(queue, batchSize);
      if (queue.length * 8 < batchSize) {
        expect(batch).toBeNull();
        continue;
      }
      expect(batch).not.toBeNull();
      expect(sequences(queue, batch as number[])).toBe(batchSize);
      // All one size: the oldest groups go first.
      expect(batch).toEqual(Array.from({ length: batchSize / 8 }, (_, i) => i));
    }
  });
});

describe('buffer packing (test_heterogeneous_packing)', () => {
  const cases: [string, number[], number, number[]][] = [
    ['first in, first out when that is exact', [1, 2, 1], 4, [0, 1, 2]],
    ['a first-in-first-out subset', [2, 2, 4], 4, [0, 1]],
    ['subset sum when greedy misses', [3, 1, 4], 5, [1, 2]],
    ['nothing when no subset fits', [2, 4], 3, []],
    ['nothing from an empty buffer', [], 4, []],
    ['a single exact group', [4], 4, [0]],
    ['Bradley-Terry pairs', [2, 2, 2, 2], 8, [0, 1, 2, 3]],
    ['large groups', [16, 8, 8], 32, [0, 1, 2]],
    ['earlier groups first', [2, 2, 4, 2, 2], 4, [0, 1]],
    ['exact fit with leftovers', [2, 4, 2, 1], 6, [0, 1]],
    ['many small groups', Array.from({ length: 16 }, () => 1), 8, [0, 1, 2, 3, 4, 5, 6, 7]],
  ];
  it.each(cases)('%s', (_, sizes, target, expected) => {
    expect(findGroupsSummingToTarget(sizes, target)).toEqual(expected);
  });

  it('finds some exact combination among mixed powers of two', () => {
    const sizes = [1, 2, 1, 4, 2];
    const found = findGroupsSummingToTarget(sizes, 8);
    expect(found.reduce((sum, i) => sum + (sizes[i] as number), 0)).toBe(8);
  });
});

describe('minimum batch allocation (test_min_batch_allocation)', () => {
  it('respects basic minimums', () => {
    const queue = [group(2, 0), group(2, 1), group(2, 0), group(2, 1)];
    const batch = grabWithMinimumAllocations(queue, 8, [env(0, 0.25), env(1, 0.5)]) as number[];
    expect(sequences(queue, batch)).toBe(8);
    const counts = perEnv(queue, batch);
    expect(counts['1']).toBeGreaterThanOrEqual(4);
    expect(counts['0']).toBeGreaterThanOrEqual(2);
  });

  it('falls back to the exact rule without minimums', () => {
    const queue = [group(1, 0), group(1, 1), group(1, 0), group(1, 1)];
    expect(grabWithMinimumAllocations(queue, 4, [env(0, null), env(1, null)])).toEqual([0, 1, 2, 3]);
  });

  it('scales minimums down when they exceed the batch', () => {
    const queue = [group(2, 0), group(2, 1)];
    expect(grabWithMinimumAllocations(queue, 4, [env(0, 0.7), env(1, 0.6)])).toHaveLength(2);
  });

  it('blocks while an env with a minimum has no groups', () => {
    const queue = [group(2, 0), group(2, 0)];
    expect(grabWithMinimumAllocations(queue, 4, [env(0, 0.3), env(1, 0.5)])).toBeNull();
  });

  it('ignores the minimum of a disconnected env', () => {
    const queue = [group(1, 0), group(1, 1)];
    expect(grabWithMinimumAllocations(queue, 2, [env(0, 0.25), env(1, 0.75, false)])).not.toBeNull();
  });

  it('keeps mixed group sizes exact', () => {
    const queue = [group(1, 0), group(4, 0), group(2, 1)];
    const batch = grabWithMinimumAllocations(queue, 7, [env(0, 0.5), env(1, 0.25)]);
    if (batch) expect(sequences(queue, batch)).toBe(7);
  });

  it('forms nothing from an empty queue', () => {
    expect(grabWithMinimumAllocations([], 4, [env(0, 0.5)])).toBeNull();
  });

  it('forms nothing when too few sequences are queued', () => {
    expect(grabWithMinimumAllocations([group(2, 0)], 4, [env(0, 0.5)])).toBeNull();
  });

  it('blocks while an env with a minimum cannot complete a pack', () => {
    const queue = [group(2, 0), ...[1, 2, 3].map(() => group(2, 6)), ...[1, 2, 3, 4, 5].map(() => group(4, 2))];
    queue.push(group(8, 3), group(8, 3), group(8, 3));
    expect(grabWithMinimumAllocations(queue, 16, [env(0, 0.1), env(3, 0.5)])).toBeNull();
  });

  it('enforces packing to the largest group size', () => {
    const queue = [group(1, 0), group(1, 0), group(1, 0), group(4, 1)];
    expect(grabWithMinimumAllocations(queue, 4, [env(0, 0.25), env(1, null)])).toBeNull();
  });

  it('preserves first-in-first-out order', () => {
    const queue = Array.from({ length: 8 }, () => group(1, 0));
    expect(grabWithMinimumAllocations(queue, 4, [env(0, null)])).toEqual([0, 1, 2, 3]);
  });

  it('gives each env exactly its share at the boundary', () => {
    const queue = [group(2, 0), group(2, 0), group(2, 1), group(2, 1)];
    const batch = grabWithMinimumAllocations(queue, 8, [env(0, 0.5), env(1, 0.5)]) as number[];
    expect(perEnv(queue, batch)).toEqual({ '0': 4, '1': 4 });
  });

  it('treats a zero minimum as none', () => {
    const queue = [group(1, 0), group(1, 1)];
    expect(grabWithMinimumAllocations(queue, 2, [env(0, 0), env(1, 0.5)])).not.toBeNull();
  });

  it('fills a large minimum from several packs of one env', () => {
    const queue = [...Array.from({ length: 16 }, () => group(1, 0)), group(4, 1), group(4, 1)];
    const batch = grabWithMinimumAllocations(queue, 16, [env(0, 0.75), env(1, null)]) as number[];
    expect(perEnv(queue, batch)['0']).toBeGreaterThanOrEqual(12);
    expect(sequences(queue, batch)).toBe(16);
  });

  it('blocks when the env with a minimum has no complete pack', () => {
    const queue = [group(2, 0), group(2, 0), group(2, 0), group(8, 1)];
    expect(grabWithMinimumAllocations(queue, 8, [env(0, 0.25), env(1, null)])).toBeNull();
  });

  it('ignores a minimum that rounds to zero sequences', () => {
    const queue = [group(1, 0), group(1, 0)];
    expect(grabWithMinimumAllocations(queue, 2, [env(0, 0.5), env(1, null), env(2, 0.3)])).not.toBeNull();
  });

  it('scales a single minimum above 100% down to the batch', () => {
    const queue = Array.from({ length: 8 }, () => group(1, 0));
    expect(grabWithMinimumAllocations(queue, 4, [env(0, 1.5)])).toHaveLength(4);
  });

  it('mixes envs with and without minimums', () => {
    const queue = [0, 0, 0, 0, 1, 1, 2, 2].map((id) => group(2, id));
    const batch = grabWithMinimumAllocations(queue, 16, [env(0, 0.4), env(1, 0.2), env(2, null)]) as number[];
    const counts = perEnv(queue, batch);
    expect(counts['0']).toBeGreaterThanOrEqual(6);
    expect(counts['1']).toBeGreaterThanOrEqual(3);
    expect(sequences(queue, batch)).toBe(16);
  });

  it('keeps batches exact with random per-env group sizes and minimums', () => {
    const next = random(2);
    let formed = 0;
    for (let trial = 0; trial < 100; trial++) {
      const batchSize = 64 * (1 + next(4));
      const envCount = 2 + next(3);
      const sizes = Array.from({ length: envCount }, () => 2 ** next(4));
      const queue = sizes.flatMap((size, id) => Array.from({ length: 5 + next(16) }, () => group(size, id)));
      const mins = sizes.map(() => 0.1 + next(1000) / 4000);
      const batch = grabWithMinimumAllocations(
        queue,
        batchSize,
        mins.map((min, id) => env(id, min)),
      );
      if (!batch) continue;
      formed++;
      expect(sequences(queue, batch)).toBe(batchSize);
    }
    expect(formed).toBeGreaterThan(0);
  });

  it('blocks on an env that has a minimum but no groups in a queue of another env', () => {
    const queue = Array.from({ length: 100 }, () => group(1, 1));
    expect(grabWithMinimumAllocations(queue, 10, [env(0, 0.5), env(1, 0.3)])).toBeNull();
    const batch = grabWithMinimumAllocations(queue, 10, [env(0, null), env(1, 0.3)]) as number[];
    expect(perEnv(queue, batch)).toEqual({ '1': 10 });
  });
});

describe('outputs of Atropos for fixed queues', () => {
  // Produced by running Atropos's grab functions repeatedly (as GET /batch does) on these queues:
  // [size, env] per group; batches and the rest as queue positions, in Atropos's order.
  const fixtures: { queue: [number, number | null][]; batchSize: number; mins: (number | null)[]; batches: number[][]; rest: number[] }[] =
    [
      {
        queue: [
          [8, 1],
          [4, 1],
          [8, 2],
          [2, null],
          [4, null],
          [2, 2],
          [4, 0],
          [2, null],
          [2, 1],
          [8, 0],
          [4, null],
          [8, 0],
          [2, 2],
          [8, 2],
          [4, 1],
          [4, null],
          [8, 2],
          [2, null],
          [2, 1],
          [1, 1],
          [1, 2],
          [4, null],
          [1, 2],
          [2, 1],
        ],
        batchSize: 16,
        mins: [],
        batches: [
          [0, 2],
          [1, 4, 3, 5, 7, 8],
          [9, 6, 10],
          [11, 13],
          [14, 15, 16],
        ],
        rest: [12, 17, 18, 19, 20, 21, 22, 23],
      },
      {
        queue: [
          [4, 2],
          [2, 1],
          [4, null],
          [8, 1],
          [4, null],
          [8, 2],
          [4, null],
          [2, 1],
          [4, 1],
          [8, 0],
          [2, 1],
          [2, 1],
          [4, 1],
          [4, 1],
          [2, 1],
          [4, 1],
          [8, null],
          [8, 2],
          [4, null],
          [8, null],
          [2, 0],
          [4, 2],
          [4, 1],
          [8, 2],
        ],
        batchSize: 24,
        mins: [],
        batches: [
          [0, 2, 3, 5],
          [4, 6, 9, 1, 7, 10, 11],
          [8, 12, 13, 15, 16],
          [17, 19, 18, 21],
        ],
        rest: [14, 20, 22, 23],
      },
      {
        queue: [
          [4, 0],
          [2, 1],
          [1, null],
          [1, 1],
          [2, 2],
          [4, 0],
          [4, null],
          [4, 0],
          [1, 1],
          [1, 1],
          [1, 0],
          [4, 1],
          [1, null],
          [4, 1],
          [1, 0],
          [1, 0],
          [4, 0],
          [4, 0],
          [4, 1],
          [4, 2],
          [1, 0],
          [2, 0],
          [1, 0],
          [1, 1],
        ],
        batchSize: 6,
        mins: [],
        batches: [[0, 1]],
        rest: [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23],
      },
      {
        queue: [
          [2, 2],
          [2, 1],
          [2, 1],
          [4, 1],
          [8, 2],
          [8, 2],
          [2, 1],
          [8, 1],
          [2, 0],
          [2, 1],
          [8, 0],
          [2, 1],
          [8, 2],
          [1, 0],
          [4, 2],
          [1, 0],
          [8, 2],
          [1, 0],
          [8, 2],
          [8, 2],
          [1, 1],
          [4, 0],
          [4, 2],
          [4, 2],
        ],
        batchSize: 16,
        mins: [0.25, 0.5, null],
        batches: [[10, 7]],
        rest: [0, 1, 2, 3, 4, 5, 6, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23],
      },
      {
        queue: [
          [2, 0],
          [2, 1],
          [2, 0],
          [2, 0],
          [4, 1],
          [4, 1],
          [2, 1],
          [4, 1],
          [4, 2],
          [4, 0],
          [2, 0],
          [2, 1],
          [4, 2],
          [2, 2],
          [2, 0],
          [4, 0],
          [4, 0],
          [2, 1],
          [2, 0],
          [2, 1],
          [2, 2],
          [4, 1],
          [2, 0],
          [2, 2],
        ],
        batchSize: 8,
        mins: [0.7, 0.6],
        batches: [
          [0, 2, 4],
          [9, 5],
          [3, 10, 1, 6],
          [15, 7],
          [16, 11, 17],
          [14, 18, 21],
        ],
        rest: [8, 12, 13, 19, 20, 22, 23],
      },
      {
        queue: [
          [1, 0],
          [8, 2],
          [8, 1],
          [2, 2],
          [2, 2],
          [4, 1],
          [4, 1],
          [1, 1],
          [8, 1],
          [4, 2],
          [2, 0],
          [4, 0],
          [8, 1],
          [4, 1],
          [2, 1],
          [1, 1],
          [8, 2],
          [2, 1],
          [8, 2],
          [2, 2],
          [4, 1],
          [2, 0],
          [2, 1],
          [4, 1],
        ],
        batchSize: 32,
        mins: [0.1, null, 0.3],
        batches: [],
        rest: Array.from({ length: 24 }, (_, i) => i),
      },
    ];
  it.each(fixtures.map((f, i) => [i, f] as const))('queue %i', (_, fixture) => {
    const queue = fixture.queue.map(([size, envId], position) => ({ size, envId, position }));
    const { batches, rest } = formBatches(
      queue,
      fixture.batchSize,
      fixture.mins.map((min, id) => env(id, min)),
    );
    expect(batches.map((batch) => batch.map((g) => g.position))).toEqual(fixture.batches);
    expect(rest.map((g) => g.position)).toEqual(fixture.rest);
  });
});
