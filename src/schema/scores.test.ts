import { describe, expect, it } from 'vitest';
import { dropsForEqualScores } from './scores.js';

describe('dropsForEqualScores', () => {
  it('drops a group whose scores are all equal, when the run asks so', () => {
    expect(dropsForEqualScores([1, 1, 1], true)).toBe(true);
    expect(dropsForEqualScores([0.5], true)).toBe(true);
    expect(dropsForEqualScores([1, 1, 0], true)).toBe(false);
    expect(dropsForEqualScores([-0, 0], true)).toBe(true);
  });

  it('keeps every group when the run does not ask', () => {
    expect(dropsForEqualScores([1, 1, 1], false)).toBe(false);
  });
});
