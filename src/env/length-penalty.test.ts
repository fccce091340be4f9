import { describe, expect, it } from 'vitest';
import { lengthPenalty } from './length-penalty.js';

describe('lengthPenalty, threshold rule (Atropos gsm8k_server)', () => {
  const threshold = { rule: 'threshold', maxTokenLength: 1000 } as const;

  it('keeps 1 up to half the budget, then falls linearly to 0 at the budget and stays there', () => {
    expect(lengthPenalty([1, 1, 1, 1, 1, 1], [10, 500, 600, 750, 1000, 1400], threshold)).toEqual([1, 1, 0.8, 0.5, 0, 0]);
  });

  it('takes another free share of the budget', () => {
    expect(lengthPenalty([1, 1, 1], [700, 800, 900], { ...threshold, thresholdRatio: 0.75 })).toEqual([1, 0.8, 0.4]);
    expect(lengthPenalty([1, 1], [1000, 1001], { ...threshold, thresholdRatio: 1 })).toEqual([1, 0]);
  });

  it('leaves a group alone unless every answer is right', () => {
    expect(lengthPenalty([1, -1, 1], [10, 900, 1000], threshold)).toEqual([1, -1, 1]);
    expect(lengthPenalty([-1, -1], [900, 1000], threshold)).toEqual([-1, -1]);
    expect(lengthPenalty([0.5, 0.5], [900, 1000], threshold)).toEqual([0.5, 0.5]);
    expect(lengthPenalty([], [], threshold)).toEqual([]);
  });
});

describe('lengthPenalty, relative rule (Atropos math_server)', () => {
  const relative = { rule: 'relative', maxTokenLength: 1000 } as const;

  it('spreads the scores from 1 for the shortest to -1 for the longest along a cosine', () => {
    const scores = lengthPenalty([1, 1, 1, 1], [100, 150, 200, 300], relative);
    expect(scores[0]).toBe(1);
    expect(scores[1]).toBeCloseTo(Math.SQRT1_2, 12);
    expect(scores[2]).toBeCloseTo(0, 12);
    expect(scores[3]).toBe(-1);
  });

  it('leaves a group whose lengths differ by a tenth of the shortest or less', () => {
    expect(lengthPenalty([1, 1, 1], [100, 105, 110], relative)).toEqual([1, 1, 1]);
    expect(lengthPenalty([1, 1], [100, 111], relative)).toEqual([1, -1]);
  });

  it('leaves a group unless every answer is right', () => {
    expect(lengthPenalty([1, -1], [100, 300], relative)).toEqual([1, -1]);
  });
});

it('needs one length per score', () => {
  expect(() => lengthPenalty([1, 1], [5], { rule: 'threshold', maxTokenLength: 10 })).toThrow('2 scores but 1 lengths');
});
