import { describe, expect, it } from 'vitest';
import { answersMatch, extractAnswer, normalizeAnswer, vqaAccuracy } from './answer.js';

describe('extractAnswer', () => {
  it('reads the last <answer> block after any reasoning', () => {
    expect(extractAnswer('I see three. <answer>3</answer>')).toBe('3');
    expect(extractAnswer('<answer>2</answer> no wait <ANSWER> red </ANSWER>')).toBe('red');
    expect(extractAnswer('<think><answer>1</answer></think>It is <answer>blue</answer>')).toBe('blue');
  });

  it('is null without an answer, with an empty one, or inside an unfinished thought', () => {
    expect(extractAnswer('three')).toBeNull();
    expect(extractAnswer('<answer>  </answer>')).toBeNull();
    expect(extractAnswer('<think>maybe <answer>3</answer>')).toBeNull();
  });
});

describe('normalizeAnswer and answersMatch', () => {
  it('compares answers as the VQA evaluation does', () => {
    expect(normalizeAnswer('Two.')).toBe('2');
    expect(normalizeAnswer('The  Red one!')).toBe('red 1');
    expect(normalizeAnswer('1,000')).toBe('1000');
    expect(normalizeAnswer('3.5')).toBe('3.5');
    expect(normalizeAnswer("man's")).toBe('man s');
    expect(answersMatch('Left.', 'left')).toBe(true);
    expect(answersMatch('three', '3')).toBe(true);
    expect(answersMatch('a circle', 'circle')).toBe(true);
    expect(answersMatch('right', 'left')).toBe(false);
    expect(answersMatch('33', '3')).toBe(false);
    expect(answersMatch(null, '3')).toBe(false);
  });
});

describe('vqaAccuracy', () => {
  const humans = (counts: Record<string, number>) => Object.entries(counts).flatMap(([a, n]) => Array<string>(n).fill(a));

  it('is min(1, matches/3) averaged over the ten leave-one-out sets', () => {
    expect(vqaAccuracy('yes', humans({ yes: 10 }))).toBe(1);
    expect(vqaAccuracy('yes', humans({ yes: 4, no: 6 }))).toBe(1);
    expect(vqaAccuracy('yes', humans({ yes: 3, no: 7 }))).toBeCloseTo(0.9, 12);
    expect(vqaAccuracy('Yes.', humans({ yes: 1, no: 9 }))).toBeCloseTo(0.3, 12);
    expect(vqaAccuracy('maybe', humans({ yes: 5, no: 5 }))).toBe(0);
    expect(vqaAccuracy(null, humans({ yes: 10 }))).toBe(0);
  });
});
