/**
 * A seeded PRNG (mulberry32): the chaos test draws every random choice from it, so a failing run is rerun with
 * the seed it printed (`CHAOS_SEED=<n>`). Timing still varies between runs; the schedule does not.
 */
export interface Prng {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** A float in [min, max). */
  between(min: number, max: number): number;
  /** `items` in a random order (a new array). */
  shuffle<T>(items: readonly T[]): T[];
}

export function createPrng(seed: number): Prng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    next,
    between: (min, max) => min + (max - min) * next(),
    shuffle(items) {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
      return out;
    },
  };
}

/** `CHAOS_SEED` when set (a rerun), else a fresh seed. */
export function chaosSeed(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.CHAOS_SEED;
  if (given !== undefined && given !== '') {
    const seed = Number(given);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error(`CHAOS_SEED: expected an integer 0..4294967295, got "${given}"`);
    return seed;
  }
  return Math.floor(Math.random() * 0xffffffff);
}
