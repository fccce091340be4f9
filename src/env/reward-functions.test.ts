import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ScoreContext } from './define.js';
import { REWARD_FUNCTIONS } from './rewards.js';

/** One built-in function with these parameters, as a plain (completion, gold answer) → value function. */
const reward = (spec: string | { name: string; [param: string]: unknown }) => {
  const { name, ...params } = typeof spec === 'string' ? { name: spec } : spec;
  const definition = REWARD_FUNCTIONS[name]!;
  const fn = definition.create(z.strictObject(definition.params).parse(params));
  // What the built-ins read of a trajectory: its completion and its item's gold answer.
  return (completion: string, answer: unknown = null) => fn({ completion, item: { answer } } as ScoreContext<unknown, unknown>) as number;
};

describe('accuracy', () => {
  const accuracy = reward('accuracy');

  it('is 1 when the boxed or last number equals the gold answer, math-aware, else 0', () => {
    expect(accuracy('So the answer is \\boxed{\\frac{1}{2}}.', '0.5')).toBe(1);
    expect(accuracy('She pays $1,000 in total.', 1000)).toBe(1);
    expect(accuracy('\\boxed{\\$18.00}', 'Janet sells 9 eggs at $2.\n#### 18')).toBe(1);
    expect(accuracy('\\boxed{3 \\text{ cm}}', '3')).toBe(1);
    expect(accuracy('\\boxed{1+2x}', '$\\boxed{2x+1}$')).toBe(1);
    expect(accuracy('\\boxed{26}', '#### 18')).toBe(0);
    expect(accuracy('I cannot tell.', '18')).toBe(0);
  });

  it('accepts any of a list of gold answers, and nothing without a gold answer', () => {
    expect(accuracy('\\boxed{0.25}', ['1/3', '\\frac{1}{4}'])).toBe(1);
    expect(accuracy('\\boxed{0.5}', ['1/3', '\\frac{1}{4}'])).toBe(0);
    expect(accuracy('\\boxed{0}', null)).toBe(0);
  });

  it('reads after the reasoning block, or the whole text when told to', () => {
    expect(accuracy('<think>\\boxed{20}</think> so \\boxed{24}', '24')).toBe(1);
    expect(accuracy('<think>\\boxed{24}</think> so \\boxed{20}', '24')).toBe(0);
    expect(accuracy('<think>it must be \\boxed{24}', '24')).toBe(0);
    expect(reward({ name: 'accuracy', split_on_think_tag: false })('<think>it must be \\boxed{24}', '24')).toBe(1);
  });

  it('marks a spray of boxed guesses wrong (max_boxed_threshold)', () => {
    const guesses = Array.from({ length: 7 }, (_, i) => `\\boxed{${i + 18}}`).join(' or ');
    expect(accuracy(`${guesses} or \\boxed{18}`, '18')).toBe(0);
    expect(reward({ name: 'accuracy', max_boxed_threshold: 8 })(`${guesses} or \\boxed{18}`, '18')).toBe(1);
  });

  it('takes its values and tolerance from its parameters', () => {
    const signed = reward({ name: 'accuracy', correct_reward: 1, incorrect_reward: -1 });
    expect(signed('\\boxed{18}', '18')).toBe(1);
    expect(signed('\\boxed{17}', '18')).toBe(-1);
    expect(reward({ name: 'accuracy', tolerance: 0.01 })('\\boxed{3.14}', '\\pi')).toBe(1);
    expect(accuracy('\\boxed{3.14}', '\\pi')).toBe(0);
  });
});

describe('format', () => {
  it('by default wants one reasoning block first, then an answer', () => {
    const format = reward('format');
    expect(format('<think>9 * 2 = 18</think>\nThe answer is 18.')).toBe(1);
    expect(format('  <THINK>hm</THINK>18')).toBe(1);
    expect(format('The answer is 18.')).toBe(0);
    expect(format('<think>9 * 2 = 18</think>   ')).toBe(0);
    expect(format('<think>a</think>18<think>b</think>')).toBe(0);
    expect(format('18 <think>a</think> 18')).toBe(0);
    expect(format('<think>a<think>b</think>18')).toBe(0);
  });

  it('matches a pattern of its own, case-sensitively when told', () => {
    const answerTag = reward({ name: 'format', pattern: '<answer>\\s*\\S+\\s*</answer>\\s*$' });
    expect(answerTag('work... <answer> 18 </answer>')).toBe(1);
    expect(answerTag('<ANSWER>18</ANSWER>')).toBe(1);
    expect(reward({ name: 'format', pattern: '<answer>', case_sensitive: true })('<ANSWER>18</ANSWER>')).toBe(0);
    expect(answerTag('<answer></answer>')).toBe(0);
  });

  it("checks Atropos's preferred_tags, any or all", () => {
    const any = reward({ name: 'format', preferred_tags: ['think', 'answer'] });
    const all = reward({ name: 'format', preferred_tags: ['think', 'answer'], require_all_tags: true });
    expect(any('<answer>5</answer>')).toBe(1);
    expect(all('<answer>5</answer>')).toBe(0);
    expect(all('<think>x</think><answer>5</answer>')).toBe(1);
    expect(any('<think>never closed')).toBe(0);
  });
});

describe('length', () => {
  it('is 1 up to the free share of max_length, then falls linearly to 0 at max_length', () => {
    const length = reward({ name: 'length', max_length: 100, threshold_ratio: 0.5 });
    expect(length('x'.repeat(50))).toBe(1);
    expect(length('x'.repeat(75))).toBe(0.5);
    expect(length('x'.repeat(90))).toBeCloseTo(0.2, 12);
    expect(length('x'.repeat(100))).toBe(0);
    expect(length('x'.repeat(500))).toBe(0);
  });

  it('counts words when told, and cuts off at max_length with no free share… or all of it', () => {
    expect(reward({ name: 'length', max_length: 4, threshold_ratio: 0.5, unit: 'words' })('one two  three\nfour five')).toBe(0);
    expect(reward({ name: 'length', max_length: 8, threshold_ratio: 0.5, unit: 'words' })('one two three four five six')).toBe(0.5);
    expect(reward({ name: 'length', max_length: 10, threshold_ratio: 0 })('xxxxx')).toBe(0.5);
    expect(reward({ name: 'length', max_length: 10, threshold_ratio: 1 })('x'.repeat(10))).toBe(1);
    expect(reward({ name: 'length', max_length: 10, threshold_ratio: 1 })('x'.repeat(11))).toBe(0);
  });
});

describe('repetition_penalty', () => {
  it('is max_penalty times the share of repeated n-grams', () => {
    const penalty = reward('repetition_penalty');
    expect(penalty('the cat sat on the mat today')).toBe(0);
    // 6 trigrams, 3 distinct: "a b c", "b c a", "c a b".
    expect(penalty('a b c a b c a b')).toBe(-0.5);
    expect(penalty('A b C a B c a b')).toBe(-0.5);
    expect(penalty('so so')).toBe(0);
    expect(penalty('')).toBe(0);
    expect(reward({ name: 'repetition_penalty', ngram_size: 1, max_penalty: -0.5 })('go go go go')).toBe(-0.375);
  });
});

describe('cosine_scaled', () => {
  const cosine = reward({ name: 'cosine_scaled', max_len: 100 });
  const padded = (answer: string, size: number) => `${'.'.repeat(size - answer.length)}${answer}`;

  it('gives a right answer 1 when short, falling on a cosine to 0.5 at max_len and beyond', () => {
    expect(cosine(padded('\\boxed{7}', 9), '7')).toBeCloseTo(0.5 + 0.25 * (1 + Math.cos(0.09 * Math.PI)), 12);
    expect(cosine(padded('\\boxed{7}', 50), '7')).toBeCloseTo(0.75, 12);
    expect(cosine(padded('\\boxed{7}', 100), '7')).toBe(0.5);
    expect(cosine(padded('\\boxed{7}', 400), '7')).toBe(0.5);
  });

  it('penalises a wrong answer -1 when short, rising to -0.5 at max_len: long wrong answers lose less', () => {
    expect(cosine(padded('\\boxed{8}', 50), '7')).toBeCloseTo(-0.75, 12);
    expect(cosine(padded('\\boxed{8}', 100), '7')).toBe(-0.5);
    expect(cosine('', '7')).toBe(-1);
    expect(cosine(padded('\\boxed{8}', 20), '7')).toBeLessThan(cosine(padded('\\boxed{8}', 80), '7'));
    expect(cosine(padded('\\boxed{7}', 20), '7')).toBeGreaterThan(cosine(padded('\\boxed{7}', 80), '7'));
  });

  it('takes its four values from its parameters', () => {
    const custom = reward({
      name: 'cosine_scaled',
      max_len: 10,
      min_value_correct: 0,
      max_value_correct: 2,
      min_value_wrong: -4,
      max_value_wrong: 0,
    });
    expect(custom('\\boxed{7}.', '7')).toBe(0);
    expect(custom('\\boxed{8}.', '7')).toBe(0);
    expect(custom(' 7', '7')).toBeCloseTo(1 + Math.cos(0.2 * Math.PI), 12);
  });
});
