import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { answersMatch, extractAnswer, goldAnswer, parseNumber } from './answer.js';

const GSM8K_TEST = new URL('./data/test.jsonl', import.meta.url);
const rows = readFileSync(GSM8K_TEST, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { question: string; answer: string });

describe('goldAnswer on the real test set', () => {
  it('reads every one of the 1,319 gold lines as the number it spells', () => {
    expect(rows).toHaveLength(1319);
    for (const [i, row] of rows.entries()) {
      const line = row.answer.split('\n').at(-1)!;
      expect(line, `line ${i + 1}`).toMatch(/^#### -?[\d,]+$/);
      // An independent reading of the same line: drop the prefix and the thousands separators.
      expect(goldAnswer(row.answer), `line ${i + 1}`).toBe(Number(line.slice(5).replace(/,/g, '')));
    }
  });

  it('reads the lines that have thousands separators or a minus sign', () => {
    const byLine = (n: number) => goldAnswer(rows[n - 1]!.answer);
    const separated = rows.filter((r) => /#### .*,/.test(r.answer)).map((r) => goldAnswer(r.answer));
    expect(separated).toContain(1_450_000);
    expect(separated.every((n) => n !== null && n >= 1000)).toBe(true);
    expect(rows.map((r) => goldAnswer(r.answer)).filter((n) => n !== null && n < 0)).toHaveLength(2);
    expect(byLine(1)).toBe(18);
  });

  it('extracts the same answer from every worked solution as the gold line says', () => {
    for (const row of rows) expect(parseNumber(extractAnswer(row.answer))).toBe(goldAnswer(row.answer));
  });

  it('finds no gold answer in a solution without a #### line', () => {
    expect(goldAnswer('She makes 9 * 2 = $18 every day.')).toBeNull();
  });
});

describe('extractAnswer', () => {
  const cases: [string, string, number | null][] = [
    ['a plain box', 'She makes 9 * 2 = 18 dollars.\nThe answer is \\boxed{18}.', 18],
    ['the last of several boxes', 'First I guessed \\boxed{12}, but rechecking gives \\boxed{14}.', 14],
    ['nested braces', 'So the share is $\\boxed{\\frac{3}{4}}$.', 0.75],
    ['\\dfrac inside a box', '\\boxed{\\dfrac{1}{8}}', 0.125],
    ['currency and separators', 'Total: \\boxed{\\$1,450,000}', 1_450_000],
    ['a unit in \\text', '\\boxed{18 \\text{ dollars}}', 18],
    ['a number in \\text', '\\boxed{\\text{18}}', 18],
    ['a negative in math mode', 'The change is $\\boxed{-5}$ degrees.', -5],
    ['the Unicode minus', '\\boxed{−7}', -7],
    ['a box without braces', 'Hence \\boxed 42.', 42],
    ['a percentage, left numeric', 'The discount is \\boxed{25\\%}.', 25],
    ['an equation', '\\boxed{x = 5}', 5],
    ['degrees', '\\boxed{90^\\circ}', 90],
    ['a decimal', '\\boxed{2.50}', 2.5],
    ['\\fbox', '\\fbox{7}', 7],
    ['an empty box, which is no answer', 'I cannot tell. \\boxed{}', null],
    ['two numbers in a box, which is ambiguous', '\\boxed{2 \\text{ hours } 30 \\text{ minutes}}', null],
    ['an unclosed box, falling back to the last number', 'so the answer is \\boxed{12', 12],
    ['a #### line', 'Janet sells 16 - 3 - 4 = 9 eggs.\nShe makes 9 * 2 = $18.\n#### 18', 18],
    ['the last #### line', '#### 3\nWait, that is wrong.\n#### 4', 4],
    ['the last number in prose', 'She has 5 apples, buys 7 more, so she has 12 apples.', 12],
    ['a separated number in prose', 'The house is now worth $1,234,567.', 1_234_567],
    ['a fraction in prose', 'Each gets 3/4', 0.75],
    ['text without a number', 'I do not know.', null],
    ['the answer after a reasoning block', '<think>Maybe 20? No: 4 * 6 = 24.</think>The answer is \\boxed{24}.', 24],
    ['the last number after a reasoning block', '<think>\\boxed{20}</think>So 24.', 24],
    ['a reasoning block that never closed', '<think>16 - 3 - 4 = 9, times 2 is \\boxed{18}', null],
  ];
  it.each(cases)('reads %s', (_, text, expected) => {
    expect(parseNumber(extractAnswer(text))).toBe(expected);
  });

  it('prefers a box over a later #### line and a later number', () => {
    expect(extractAnswer('\\boxed{5}\n#### 6\nand 7')).toBe('5');
  });
});

describe('parseNumber', () => {
  const cases: [string, number | null][] = [
    ['42', 42], ['-3', -3], ['0.5', 0.5], ['.5', 0.5], ['5.', 5], ['1,234', 1234], ['12,345,678.9', 12_345_678.9],
    ['3/4', 0.75], ['-1/2', -0.5], ['1/0', null], ['25%', 25], ['$18', 18], ['18 dollars', 18], [' 7 ', 7],
    ['', null], ['none', null], ['1, 2', null], ['3-4', null],
  ];
  it.each(cases)('reads %j as %s', (text, expected) => {
    expect(parseNumber(text)).toBe(expected);
  });

  it('reads null as no number', () => {
    expect(parseNumber(null)).toBeNull();
  });
});

describe('answersMatch', () => {
  it('accepts float noise and equal forms of one number', () => {
    expect(answersMatch(0.1 + 0.2, 0.3)).toBe(true);
    expect(answersMatch(parseNumber('3/4'), parseNumber('0.75'))).toBe(true);
    expect(answersMatch(parseNumber('1,000'), 1000)).toBe(true);
  });

  it('rejects different numbers, also large close ones, and missing answers', () => {
    expect(answersMatch(1_000_001, 1_000_000)).toBe(false);
    expect(answersMatch(0.33, 1 / 3)).toBe(false);
    expect(answersMatch(-18, 18)).toBe(false);
    expect(answersMatch(null, 18)).toBe(false);
    expect(answersMatch(18, null)).toBe(false);
  });
});
