import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashSeed, seededRandom } from './random.js';

describe('seededRandom', () => {
  it('gives the same sequence for a seed and resumes from its saved state', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 0, max: 50 }), (seed, cut) => {
        const whole = seededRandom(seed);
        const expected = Array.from({ length: cut + 20 }, () => whole.next());
        const first = seededRandom(seed);
        const head = Array.from({ length: cut }, () => first.next());
        const saved = JSON.parse(JSON.stringify({ random: first.state })) as { random: number };
        const resumed = seededRandom(saved.random);
        expect([...head, ...Array.from({ length: 20 }, () => resumed.next())]).toEqual(expected);
      }),
    );
  });

  it('draws integers uniformly in range, picks, and shuffles into permutations', () => {
    const random = seededRandom(7);
    const counts = Array.from({ length: 13 }, () => 0);
    for (let i = 0; i < 13_000; i++) counts[random.int(13)]!++;
    for (const count of counts) expect(count).toBeGreaterThan(850); // 1000 expected each
    for (let i = 0; i < 1000; i++) expect(random.next()).toBeGreaterThanOrEqual(0);
    expect(['a', 'b', 'c']).toContain(random.pick(['a', 'b', 'c']));
    const shuffled = random.shuffle([1, 2, 3, 4, 5, 6]);
    expect([...shuffled].sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(() => random.int(0)).toThrow(RangeError);
    expect(() => random.pick([])).toThrow(RangeError);
    expect(seededRandom(1).next()).not.toBe(seededRandom(2).next());
  });
});

describe('hashSeed', () => {
  it('is a deterministic unsigned 32-bit hash that tells its parts apart', () => {
    expect(hashSeed(0, 1)).toBe(hashSeed(0, 1));
    expect(hashSeed(0, 1)).not.toBe(hashSeed(1, 0));
    expect(hashSeed('1', 2)).not.toBe(hashSeed(12));
    fc.assert(
      fc.property(fc.integer(), fc.nat(), (a, b) => {
        const h = hashSeed(a, b);
        expect(Number.isInteger(h) && h >= 0 && h < 2 ** 32).toBe(true);
      }),
    );
  });
});
