import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { extractMathAnswer, goldMathAnswer, lastNumber, mathAnswersEqual, normalizeMathAnswer } from './math-answer.js';

describe('lastNumber', () => {
  const cases: [string, string | null][] = [
    ['16 - 3 - 4 = 9 eggs, so 9 * 2 = 18.', '18'],
    ['The house is worth $1,234,567.', '1,234,567'],
    ['Each gets 3/4 of a pie', '3/4'],
    ['The temperature fell to -5 degrees', '-5'],
    ['It drops by −7', '-7'],
    ['16-3-4 is what is left', '4'],
    ['about .5 of them', '.5'],
    ['a 25% discount', '25%'],
    ['no digits at all', null],
  ];
  it.each(cases)('in %j finds %j', (text, expected) => expect(lastNumber(text)).toBe(expected));
});

describe('extractMathAnswer', () => {
  it('prefers the last box to the last number, and reads only after the reasoning block', () => {
    expect(extractMathAnswer('First \\boxed{12}; then 14 more, so \\boxed{26} in all, out of 30.')).toBe('26');
    expect(extractMathAnswer('<think>maybe \\boxed{20}</think>So it is 24.')).toBe('24');
    expect(extractMathAnswer('<think>it is 18')).toBeNull();
    expect(extractMathAnswer('<think>it is 18', { splitOnThink: false })).toBe('18');
    expect(extractMathAnswer('I do not know.')).toBeNull();
  });
});

describe('goldMathAnswer', () => {
  it('reads GSM8K solutions, MATH solutions, plain answers and numbers', () => {
    expect(goldMathAnswer('Janet sells 16 - 3 - 4 = 9 eggs.\nShe makes 9 * 2 = $18.\n#### 18')).toBe('18');
    expect(goldMathAnswer('#### 1,450,000')).toBe('1,450,000');
    expect(goldMathAnswer('So the probability is $\\boxed{\\frac{1}{4}}$.')).toBe('\\frac{1}{4}');
    expect(goldMathAnswer(' 42 ')).toBe('42');
    expect(goldMathAnswer(0.5)).toBe('0.5');
    expect(goldMathAnswer(12n)).toBe('12');
    expect(goldMathAnswer(null)).toBeNull();
    expect(goldMathAnswer('  ')).toBeNull();
  });
});

describe('normalizeMathAnswer', () => {
  const cases: [string, string][] = [
    ['\\$18.00', '18.00'],
    ['$\\frac{1}{2}$', '\\frac{1}{2}'],
    ['\\dfrac{3}{4}', '\\frac{3}{4}'],
    ['1{,}000', '1000'],
    ['1\\,000\\,000', '1000000'],
    ['12,345.6', '12345.6'],
    ['1, 2', '1, 2'],
    ['3 \\text{ cm}', '3'],
    ['3\\,\\mathrm{cm}^2', '3'],
    ['18 dollars', '18'],
    ['5 km/h', '5'],
    ['3cm', '3'],
    ['2x', '2x'],
    ['3ab', '3ab'],
    ['90^\\circ', '90'],
    ['90°', '90'],
    ['50%', '50\\%'],
    ['50 percent', '50\\%'],
    ['x = 5', '5'],
    ['\\left(1, 2\\right)', '(1, 2)'],
    ['\\boxed{\\textbf{7}}', '7'],
    ['x²', 'x^2'],
    ['½', '1/2'],
    ['−3', '-3'],
    ['5.', '5'],
  ];
  it.each(cases)('reads %j as %j', (answer, expected) => expect(normalizeMathAnswer(answer)).toBe(expected));
});

describe('mathAnswersEqual', () => {
  const equal: [string | number, string | number][] = [
    ['\\frac{1}{2}', '0.5'],
    ['\\dfrac{1}{2}', '1/2'],
    ['\\tfrac12', '.5'],
    ['1,000', '1000'],
    ['1,000', 1000],
    ['\\$18.00', '18'],
    ['$18', '18'],
    ['3 cm', '3'],
    ['3\\text{ cm}', '3'],
    ['\\sqrt{2}/2', '\\frac{\\sqrt{2}}{2}'],
    ['\\frac{\\sqrt{2}}{2}', '0.7071067811865476'],
    ['\\frac{\\sqrt{2}}{2}', '\\frac{1}{\\sqrt{2}}'],
    ['2\\sqrt{2}', '\\sqrt{8}'],
    ['2x+1', '1+2x'],
    ['x^2-1', '(x-1)(x+1)'],
    ['\\frac{x}{2}', '0.5x'],
    ['50\\%', '0.5'],
    ['50%', '50'],
    ['25\\%', '\\frac{1}{4}'],
    ['0.1+0.2', '0.3'],
    ['-\\frac{1}{3}', '-1/3'],
    ['3\\frac{1}{2}', '3.5'],
    ['1.5\\times 10^{3}', '1500'],
    ['10^{3}', '1,000'],
    ['\\pi', '3.14159265358979'],
    ['2\\pi', '\\frac{4\\pi}{2}'],
    ['x = 5', '5'],
    ['90^\\circ', '90'],
    ['(1, 2)', '\\left(1,2\\right)'],
    ['\\{1, 2\\}', '\\{2, 1\\}'],
    ['(1, \\frac{1}{2})', '(1, 0.5)'],
    ['\\sqrt[3]{8}', '2'],
    ['e^{i\\pi}', '-1'],
    ['Yes', 'yes'],
    ['\\text{Tuesday}', 'Tuesday'],
    ['1,234,567', '1234567'],
    ['-7', '−7'],
    ['0.\\overline{3}', '\\frac{1}{3}'],
    ['\\frac{\\pi}{2}', '\\frac{1}{2}\\pi'],
    ['5\\sqrt{3}', '\\sqrt{75}'],
    ['\\$1,000.50', '1000.5'],
    ['24 \\text{ square units}', '24'],
    ['(-\\infty, 2]', '(-\\infty,2]'],
  ];
  it.each(equal)('%j equals %j', (a, b) => {
    expect(mathAnswersEqual(a, b)).toBe(true);
    expect(mathAnswersEqual(b, a)).toBe(true);
  });

  const different: [string | number, string | number][] = [
    ['\\frac{1}{3}', '0.33'],
    ['1,000,001', '1,000,000'],
    ['-18', '18'],
    ['2x+1', '2x-1'],
    ['x^2+1', '(x-1)(x+1)'],
    ['(1, 2)', '(2, 1)'],
    ['(1, 2)', '\\{1, 2\\}'],
    ['(1, 2)', '(1, 2, 3)'],
    ['\\sqrt{2}', '1.41'],
    ['\\pi', '3.14'],
    ['50\\%', '0.05'],
    ['Yes', 'No'],
    ['12', 'twelve'],
    ['', '0'],
  ];
  it.each(different)('%j differs from %j', (a, b) => {
    expect(mathAnswersEqual(a, b)).toBe(false);
    expect(mathAnswersEqual(b, a)).toBe(false);
  });

  it('honours the tolerance and can switch symbolic comparison off', () => {
    expect(mathAnswersEqual('3.14', '\\pi', { tolerance: 0.01 })).toBe(true);
    expect(mathAnswersEqual('0.333', '1/3', { tolerance: 1e-3 })).toBe(true);
    expect(mathAnswersEqual('2x+1', '1+2x', { symbolic: false })).toBe(true); // the engine's canonical forms are the same
    expect(mathAnswersEqual('x^2-1', '(x-1)(x+1)', { symbolic: false })).toBe(false);
  });

  it('compares an answer the engine cannot read as text, without a new engine each time', () => {
    const started = Date.now();
    for (let i = 0; i < 50; i++) expect(mathAnswersEqual('(-\\infty, 2]', '(-\\infty, 3]')).toBe(false);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('never matches a missing answer', () => {
    expect(mathAnswersEqual(null, '5')).toBe(false);
    expect(mathAnswersEqual('5', undefined)).toBe(false);
  });

  it('compares what it must not evaluate by structure, at once: no loop of a billion terms, no giant factorial', () => {
    const started = Date.now();
    expect(mathAnswersEqual('\\sum_{k=1}^{1000000000} k', '500000000500000000')).toBe(false);
    expect(mathAnswersEqual('1000000!', '1')).toBe(false);
    expect(mathAnswersEqual('10^{10^{10}}', '10^{10^{10}}')).toBe(true);
    expect(mathAnswersEqual('10^{10^{10}}', '5')).toBe(false);
    expect(mathAnswersEqual('10^{10^{10}}', '10^{10^{11}}')).toBe(false);
    expect(mathAnswersEqual('5!', '120')).toBe(true);
    expect(mathAnswersEqual(`\\frac{1}{2}+${'x+'.repeat(300)}1`, '1')).toBe(false);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe('on the GSM8K test set', () => {
  const rows = readFileSync(new URL('../../environments/gsm8k/data/test.jsonl', import.meta.url), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { answer: string });

  it('extracts from every worked solution the answer its #### line gives', () => {
    expect(rows).toHaveLength(1319);
    for (const [i, row] of rows.entries()) {
      const gold = goldMathAnswer(row.answer);
      expect(mathAnswersEqual(extractMathAnswer(row.answer), gold), `line ${i + 1}: ${gold}`).toBe(true);
      expect(mathAnswersEqual(`\\boxed{${gold}}`, gold), `line ${i + 1}`).toBe(true);
      expect(mathAnswersEqual(`\\boxed{${Number(gold!.replace(/,/g, '')) + 1}}`, gold), `line ${i + 1}`).toBe(false);
    }
  });
});
