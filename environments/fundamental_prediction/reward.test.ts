import { describe, expect, it } from 'vitest';
import { binarise, lengthPenalised, magnitudeScore, predictionScore } from './reward.js';

describe('magnitudeScore', () => {
  it('steps down with the distance in percentage points, each bound inclusive', () => {
    expect(magnitudeScore('4.5', '4.5')).toBe(1.0);
    expect(magnitudeScore('5', '4.5')).toBe(0.9); // 0.5 off
    expect(magnitudeScore('5.5', '4.5')).toBe(0.9); // exactly 1 off
    expect(magnitudeScore('7', '4.5')).toBe(0.7); // 2.5 off
    expect(magnitudeScore('9.5', '4.5')).toBe(0.7); // exactly 5
    expect(magnitudeScore('-5.5', '4.5')).toBe(0.5); // exactly 10
    expect(magnitudeScore('24.5', '4.5')).toBe(0.3); // exactly 20
    expect(magnitudeScore('25', '4.5')).toBe(0); // 20.5 off
    expect(magnitudeScore('0', '0')).toBe(1.0);
  });

  it('compares the numbers as they are: a reduction written with a minus sign is far from an unsigned one', () => {
    expect(magnitudeScore('-12.3', '12.3')).toBe(0); // 24.6 off
    expect(magnitudeScore('+12.3', '12.3')).toBe(1.0);
  });

  it('gives 0 when the expected magnitude does not read as a number, and reads numeric columns', () => {
    expect(magnitudeScore('5', '5%')).toBe(0);
    expect(magnitudeScore('5', 'n/a')).toBe(0);
    expect(magnitudeScore('5', 'nan')).toBe(0);
    expect(magnitudeScore('5', 'inf')).toBe(0);
    expect(magnitudeScore('5', 5)).toBe(1.0);
    expect(magnitudeScore('5', ' 5.0 ')).toBe(1.0);
  });
});

describe('predictionScore', () => {
  it('is 0 without a prediction or with the wrong direction, 1 + the magnitude bonus with the right one', () => {
    expect(predictionScore(null, 'raised', '4.5')).toBe(0);
    expect(predictionScore({ direction: 'reduced', magnitude: '4.5' }, 'raised', '4.5')).toBe(0);
    expect(predictionScore({ direction: 'raised', magnitude: '4.5' }, 'raised', '4.5')).toBe(2);
    expect(predictionScore({ direction: 'raised', magnitude: '7.5' }, 'raised', '4.5')).toBeCloseTo(1.7, 12);
    expect(predictionScore({ direction: 'maintained', magnitude: '0' }, 'maintained', '0')).toBe(2);
    expect(predictionScore({ direction: 'raised', magnitude: '60' }, 'raised', '4.5')).toBe(1);
  });
});

describe('length penalty and binarisation', () => {
  it('penalises only responses over 95% of the budget, by half their share of it', () => {
    expect(lengthPenalised(2, 950, 1000)).toBe(2);
    expect(lengthPenalised(2, 951, 1000)).toBeCloseTo(2 - 0.4755, 12);
    expect(lengthPenalised(1, 1000, 1000)).toBe(0.5);
    expect(lengthPenalised(0, 1000, 1000)).toBe(-0.5);
    expect(lengthPenalised(1, 2500, 1000)).toBe(-0.25);
  });

  it('binarises as Atropos does: +1 for anything positive, -1 otherwise', () => {
    expect([2, 1.3, 0.0001, 0, -0.5].map(binarise)).toEqual([1, 1, 1, -1, -1]);
  });

  it('so a right direction stays +1 unless its response is over twice the budget', () => {
    const reward = (score: number, tokens: number) => binarise(lengthPenalised(score, tokens, 1000));
    expect(reward(2, 1000)).toBe(1); // 2 - 0.5
    expect(reward(1, 1000)).toBe(1); // 1 - 0.5
    expect(reward(1, 2000)).toBe(-1); // 1 - 1.0 = 0
    expect(reward(1.3, 2500)).toBe(1); // 1.3 - 1.25
    expect(reward(0, 10)).toBe(-1);
  });
});
