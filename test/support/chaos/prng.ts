/**
 * A seeded PRNG (mulberry32): the chaos test draws every random choice from it, so a failing run is rerun with
 * the seed it printed (`CHAOS_SEED=<n>`). Timing still varies between runs; the schedule does not.
 */
import { seededRandom } from '../../../src/env/random.js';

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
  // The SDK's generator: the same draws as the mulberry32 this harness has always used, so a printed seed still replays.
  const random = seededRandom(seed);
  return { seed, next: random.next, between: (min, max) => min + (max - min) * random.next(), shuffle: random.shuffle };
}

/** `CHAOS_SEED` when set (a rerun), else a fresh seed. */
export function chaosSeed(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.CHAOS_SEED;
  if (given !== undefined && given !== '') {
    const seed = Number(given);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
      throw new Error(`CHAOS_SEED: expected an integer 0..4294967295, got "${given}"`);
    return seed;
  }
  return Math.floor(Math.random() * 0xffffffff);
}
