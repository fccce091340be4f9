/**
 * A seeded generator whose whole state is one JSON number, and a hash that makes seeds of any parts: for data drawn
 * on demand (item i is the same on every worker) and for state that must resume exactly (a game's cards to come).
 */

/**
 * A seeded pseudo-random generator (mulberry32) whose whole state is one unsigned 32-bit number, so that a game keeps
 * it in its JSON state slot and a resumed game draws exactly what the interrupted one would have.
 */
export interface SeededRandom {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** A shuffled copy (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[];
  /** The state now: `seededRandom(random.state)` continues the same sequence. */
  readonly state: number;
}

/** A generator starting from `seed` (any number; only its low 32 bits count), or continuing from a saved `state`. */
export function seededRandom(seed: number): SeededRandom {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => {
    if (!Number.isInteger(n) || n <= 0) throw new RangeError(`SeededRandom.int: expected a positive integer, got ${n}`);
    return Math.floor(next() * n);
  };
  return {
    next,
    int,
    pick: (items) => {
      if (items.length === 0) throw new RangeError('SeededRandom.pick: empty list');
      return items[int(items.length)]!;
    },
    shuffle: (items) => {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i--) {
        const j = int(i + 1);
        [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      }
      return copy;
    },
    get state() {
      return a;
    },
  };
}

/** A well-mixed unsigned 32-bit seed from any parts (`hashSeed(config.seed, itemIndex)`): FNV-1a, then murmur3's finaliser. */
export function hashSeed(...parts: (string | number)[]): number {
  let h = 0x811c9dc5;
  for (const ch of parts.map(String).join('\u0000')) {
    h ^= ch.codePointAt(0)!;
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
