import { describe, expect, it } from 'vitest';
import { answerPattern, parsePrediction, pythonFloat } from './answer.js';

const think = '<think>Revenue grew every quarter and the new contract adds volume.</think>\n';

describe('parsePrediction', () => {
  it('reads a well-formed answer after the thinking block', () => {
    expect(parsePrediction(`${think}The revenue will be: raised and the magnitude will be: 4.5%`, 'revenue')).toEqual({
      direction: 'raised',
      magnitude: '4.5',
    });
    expect(
      parsePrediction(
        `${think}My forecast: The dividend per share will be: maintained and the magnitude will be: 0%.`,
        'dividend per share',
      ),
    ).toEqual({ direction: 'maintained', magnitude: '0' });
  });

  it('ignores case and spacing around the parts, and keeps a sign and decimals as written', () => {
    expect(parsePrediction('<THINK>x</Think>the REVENUE will be:Reduced   and\nthe magnitude  will be:  -3.25%', 'revenue')).toEqual({
      direction: 'reduced',
      magnitude: '-3.25',
    });
    expect(parsePrediction(`${think}The revenue will be: raised and the magnitude will be: +12%`, 'revenue')).toEqual({
      direction: 'raised',
      magnitude: '+12',
    });
  });

  it('needs exactly one <think> and one </think>, in that order', () => {
    const answer = 'The revenue will be: raised and the magnitude will be: 4.5%';
    expect(parsePrediction(answer, 'revenue')).toBeNull();
    expect(parsePrediction(`<think>unclosed ${answer}`, 'revenue')).toBeNull();
    expect(parsePrediction(`reasoning</think>${answer}`, 'revenue')).toBeNull();
    expect(parsePrediction(`<think>a</think><think>b</think>${answer}`, 'revenue')).toBeNull();
    expect(parsePrediction(`<think>a<think>b</think>${answer}`, 'revenue')).toBeNull();
    expect(parsePrediction(`</think>${answer}<think>`, 'revenue')).toBeNull();
  });

  it('reads only what follows </think>: an answer inside the thinking block does not count', () => {
    expect(parsePrediction('<think>The revenue will be: raised and the magnitude will be: 4.5%</think>So, up.', 'revenue')).toBeNull();
  });

  it('refuses two answer sentences, even when they agree', () => {
    const answer = 'The revenue will be: raised and the magnitude will be: 4.5%';
    expect(parsePrediction(`${think}${answer}\n${answer}`, 'revenue')).toBeNull();
  });

  it('refuses a direction other than maintained, raised or reduced', () => {
    for (const direction of ['increased', 'cut', 'flat', 'up']) {
      expect(parsePrediction(`${think}The revenue will be: ${direction} and the magnitude will be: 4%`, 'revenue')).toBeNull();
    }
  });

  it('refuses a magnitude that is not a number followed by %', () => {
    for (const magnitude of ['about 5%', 'five%', '5 percent', '5', '.5%', '5.%', '1e2%']) {
      expect(parsePrediction(`${think}The revenue will be: raised and the magnitude will be: ${magnitude}`, 'revenue')).toBeNull();
    }
  });

  it("needs the item's metric spelt as the item spells it, regex characters and all", () => {
    expect(parsePrediction(`${think}The EPS will be: reduced and the magnitude will be: 12%`, 'earnings per share')).toBeNull();
    expect(parsePrediction(`${think}The P/E (ttm) will be: raised and the magnitude will be: 2%`, 'P/E (ttm)')).toEqual({
      direction: 'raised',
      magnitude: '2',
    });
    expect(answerPattern('a.b').test('The axb will be: raised and the magnitude will be: 2%')).toBe(false);
  });
});

describe('pythonFloat', () => {
  it("reads what Python's float() reads", () => {
    expect(pythonFloat('4.5')).toBe(4.5);
    expect(pythonFloat(' 12 ')).toBe(12);
    expect(pythonFloat('+3')).toBe(3);
    expect(pythonFloat('-0.25')).toBe(-0.25);
    expect(pythonFloat('.5')).toBe(0.5);
    expect(pythonFloat('5.')).toBe(5);
    expect(pythonFloat('1e2')).toBe(100);
    expect(pythonFloat('1_000')).toBe(1000);
    expect(pythonFloat('-Infinity')).toBe(Number.NEGATIVE_INFINITY);
    expect(pythonFloat('nan')).toBeNaN();
    expect(pythonFloat(7.5)).toBe(7.5);
  });

  it('refuses what float() raises on', () => {
    for (const text of ['', ' ', '5%', 'abc', '1__0', '_1', '1_', '1.2.3', '0x10', '--1', 'infinit']) expect(pythonFloat(text)).toBeNull();
  });
});
