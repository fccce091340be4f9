import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { playEpisode } from 'clotho';
import gsm8k, { goldAnswer } from './index.js';

const GSM8K_TEST = new URL('./data/test.jsonl', import.meta.url);
const rows = readFileSync(GSM8K_TEST, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as { question: string; answer: string });
/** What the environment makes of a completion when the gold answer is `gold`: its parse, score and metrics. */
const play = (completion: string, gold: number) => playEpisode(gsm8k, { item: { question: 'q', answer: gold }, replies: [completion] });

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
    expect(separated.every((n) => n >= 1000)).toBe(true);
    expect(rows.map((r) => goldAnswer(r.answer)).filter((n) => n < 0)).toHaveLength(2);
    expect(byLine(1)).toBe(18);
  });

  it('finds no gold answer in a solution without a #### line', () => {
    expect(goldAnswer('She makes 9 * 2 = $18 every day.')).toBeNaN();
  });
});

describe('reading and scoring a completion', () => {
  const right: [string, string, number][] = [
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
    ['a percentage, read at face value', 'The discount is \\boxed{25\\%}.', 25],
    ['an equation', '\\boxed{x = 5}', 5],
    ['degrees', '\\boxed{90^\\circ}', 90],
    ['a decimal', '\\boxed{2.50}', 2.5],
    ['\\fbox', '\\fbox{7}', 7],
    ['an unclosed box, falling back to the last number', 'so the answer is \\boxed{12', 12],
    ['a #### line', 'Janet sells 16 - 3 - 4 = 9 eggs.\nShe makes 9 * 2 = $18.\n#### 18', 18],
    ['the last #### line', '#### 3\nWait, that is wrong.\n#### 4', 4],
    ['the last number in prose', 'She has 5 apples, buys 7 more, so she has 12 apples.', 12],
    ['a separated number in prose', 'The house is now worth $1,234,567.', 1_234_567],
    ['a fraction in prose', 'Each gets 3/4', 0.75],
    ['the answer after a reasoning block', '<think>Maybe 20? No: 4 * 6 = 24.</think>The answer is \\boxed{24}.', 24],
    ['the last number after a reasoning block', '<think>\\boxed{20}</think>So 24.', 24],
    ['a box before a later #### line and a later number', '\\boxed{5}\n#### 6\nand 7', 5],
  ];
  it.each(right)('scores +1 for %s', async (_, text, gold) => {
    expect(await play(text, gold)).toMatchObject({ score: 1, metrics: { correct: 1, answered: 1 } });
  });

  const unanswered: [string, string][] = [
    ['an empty box', 'I cannot tell. \\boxed{}'],
    ['text without a number', 'I do not know.'],
    ['a reasoning block that never closed', '<think>16 - 3 - 4 = 9, times 2 is \\boxed{18}'],
  ];
  it.each(unanswered)('scores -1, unanswered, for %s', async (_, text) => {
    expect(await play(text, 18)).toMatchObject({ score: -1, metrics: { correct: 0, answered: 0 } });
  });

  it('scores -1 for a different number, also a large close one, or two numbers in a box', async () => {
    expect(await play('\\boxed{1000001}', 1_000_000)).toMatchObject({ score: -1, metrics: { correct: 0, answered: 1 } });
    expect(await play('\\boxed{0.33}', 1 / 3)).toMatchObject({ score: -1 });
    expect(await play('\\boxed{-18}', 18)).toMatchObject({ score: -1 });
    expect(await play('\\boxed{2 \\text{ hours } 30 \\text{ minutes}}', 30)).toMatchObject({ score: -1 });
    expect(await play('\\boxed{2 \\text{ hours } 30 \\text{ minutes}}', 2)).toMatchObject({ score: -1 });
  });

  it('accepts equal forms of one number', async () => {
    expect(await play('\\boxed{0.75}', 3 / 4)).toMatchObject({ score: 1 });
    expect(await play('\\boxed{1,000}', 1000)).toMatchObject({ score: 1 });
    expect(await play('\\boxed{\\$18.00}', 18)).toMatchObject({ score: 1 });
  });
});
