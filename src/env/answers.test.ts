import { describe, expect, it } from 'vitest';
import { choiceLetters, extractChoiceLetter, lastBoxed, stripThinking } from './answers.js';

describe('stripThinking', () => {
  it('keeps the text after the last </think>, or all of it without a reasoning block', () => {
    expect(stripThinking('<think>maybe A</think>The answer is B.')).toBe('The answer is B.');
    expect(stripThinking('<think>A?</think> no <think>C?</think>\nB')).toBe('\nB');
    expect(stripThinking('<THINK>A?</THINK>B')).toBe('B');
    expect(stripThinking('Just B.')).toBe('Just B.');
    expect(stripThinking('')).toBe('');
  });

  it('reads after a lone </think>: the chat template opened the block in the prompt', () => {
    expect(stripThinking('so it is B.</think>\n\nB')).toBe('\n\nB');
    expect(stripThinking('</think>')).toBe('');
  });

  it('finds no answer while a <think> is open: output cut off mid-thought, or thinking begun again', () => {
    expect(stripThinking('<think>It is B, so')).toBeNull();
    expect(stripThinking('<think>')).toBeNull();
    expect(stripThinking('The answer is \\boxed{4}. <think>')).toBeNull();
    expect(stripThinking('<think>A</think>The answer is B. <think>or is it')).toBeNull();
    expect(stripThinking('<Think>It is B')).toBeNull();
  });
});

describe('lastBoxed', () => {
  it('reads the last box, \\boxed or \\fbox', () => {
    expect(lastBoxed('\\boxed{1} then \\boxed{2}')).toBe('2');
    expect(lastBoxed('\\boxed{1} then \\fbox{7}')).toBe('7');
    expect(lastBoxed('\\fbox{7} then \\boxed{8}')).toBe('8');
    expect(lastBoxed('$\\boxed{-5}$ degrees')).toBe('-5');
  });

  it('balances nested braces and takes escaped braces as characters', () => {
    expect(lastBoxed('\\boxed{\\frac{\\sqrt{2}}{2}}')).toBe('\\frac{\\sqrt{2}}{2}');
    expect(lastBoxed('\\boxed{\\{1, 2\\}}')).toBe('\\{1, 2\\}');
    expect(lastBoxed('\\boxed{\\}}')).toBe('\\}');
    expect(lastBoxed('\\boxed{\\text{B}} and {more}')).toBe('\\text{B}');
  });

  it('trims the contents, and allows space before the brace', () => {
    expect(lastBoxed('\\boxed{  18 \n}')).toBe('18');
    expect(lastBoxed('\\boxed {A}')).toBe('A');
    expect(lastBoxed('\\fbox\n{ B }')).toBe('B');
  });

  it('reads the next token of a box without braces', () => {
    expect(lastBoxed('Hence \\boxed 42.')).toBe('42.');
    expect(lastBoxed('$\\boxed 42$')).toBe('42');
    expect(lastBoxed('\\boxed')).toBeNull();
    expect(lastBoxed('\\boxed $')).toBeNull();
  });

  it('gives an empty answer for an empty box, and none without a box, in a box that never closes, or a longer command', () => {
    expect(lastBoxed('I cannot tell. \\boxed{}')).toBe('');
    expect(lastBoxed('\\boxed{   }')).toBe('');
    expect(lastBoxed('no box here')).toBeNull();
    expect(lastBoxed('')).toBeNull();
    expect(lastBoxed('so \\boxed{\\frac{1}{2}')).toBeNull();
    expect(lastBoxed('\\boxed{3} but then \\boxed{4')).toBeNull();
    expect(lastBoxed('\\boxedanswer{3}')).toBeNull();
  });

  it('reads the whole text: a box inside a reasoning block counts unless stripThinking removed it', () => {
    expect(lastBoxed('<think>\\boxed{1}</think> so 2')).toBe('1');
    expect(lastBoxed(stripThinking('<think>\\boxed{1}</think> so 2')!)).toBeNull();
  });
});

describe('choiceLetters', () => {
  it('names the first n capitals', () => {
    expect(choiceLetters(4)).toEqual(['A', 'B', 'C', 'D']);
    expect(choiceLetters(10).join('')).toBe('ABCDEFGHIJ');
    expect(() => choiceLetters(0)).toThrow(RangeError);
    expect(() => choiceLetters(27)).toThrow(RangeError);
  });
});

describe('extractChoiceLetter', () => {
  const found: [string, string][] = [
    ['The answer is (B)', 'B'],
    ['The answer is B.', 'B'],
    ['the answer is: C', 'C'],
    ['So the final answer is **D**.', 'D'],
    ['The best answer is: A', 'A'],
    ['The correct answer is (C) Paris, because it is the capital.', 'C'],
    ['Answer: B', 'B'],
    ['**Answer:** B', 'B'],
    ['**Final Answer: (A)**', 'A'],
    ['The correct option is D.', 'D'],
    ['My answer would be option C.', 'C'],
    ['The answer to this question is B.', 'B'],
    ['Therefore, the answer is [A].', 'A'],
    ['Answer = D', 'D'],
    ['B is correct.', 'B'],
    ['Option (C) is the right answer.', 'C'],
    ['So **D** is the best.', 'D'],
    ['\\boxed{B}', 'B'],
    ['Thus $\\boxed{C}$.', 'C'],
    ['\\boxed{\\text{D}}', 'D'],
    ['\\boxed{(A)}', 'A'],
    ['\\boxed{B. Paris}', 'B'],
    ['<answer>C</answer>', 'C'],
    ['<answer> (D) </answer>', 'D'],
    ['B', 'B'],
    ['B.', 'B'],
    [' C ', 'C'],
    ['**B**', 'B'],
    ['(D)', 'D'],
    ['A) Paris', 'A'],
    ['C. Paris is the capital of France.', 'C'],
    ['Paris is the capital, and it is listed second.\n\n**B**', 'B'],
    ['Paris is the capital.\nB', 'B'],
    ["I'd go with **C** here.", 'C'],
    ['Of the four, (A) fits best.', 'A'],
    ['Option A is wrong and option C is too narrow. The answer is B.', 'B'],
    ['The answer is B. To repeat: the answer is B.', 'B'],
    ['The answer is B, not C.', 'B'],
    ['<think>Is it A? (A) seems off, maybe C.</think>The answer is (B).', 'B'],
    ['<think>The answer is A.</think>\n\n**D**', 'D'],
  ];
  it.each(found)('reads %j as %s', (text, letter) => {
    expect(extractChoiceLetter(text)).toBe(letter);
  });

  const none: [string, string][] = [
    ['two stated answers', 'The answer is A. Wait, no: the answer is B.'],
    ['a box and a phrase that disagree', 'The answer is (A), so \\boxed{C}'],
    ['two bold letters', 'Either **A** or **C**.'],
    ['a bare letter on the first line and another on the last', 'A. It could be Paris.\nB'],
    ['no letter', 'Paris is the capital of France.'],
    ['the answer as text only', 'The answer is Paris.'],
    ['an article, not a letter', 'The answer is a city on the Seine.'],
    ['a word that starts with a letter', 'The answer is Because of the river.'],
    ['a sentence starting with the article A', 'A city on the Seine is the capital.'],
    ['a lowercase letter', 'the answer is b'],
    ['an open reasoning block', '<think>The answer is B, I think, but'],
    ['letters only inside reasoning', '<think>The answer is B.</think>Paris.'],
    ['an empty reply', ''],
    ['options discussed but none chosen', 'Option A is about rivers and option B about mountains.'],
    ['two letters called correct', 'A is correct for rivers, but C is correct for lakes.'],
  ];
  it.each(none)('finds no single letter in %s', (_, text) => {
    expect(extractChoiceLetter(text)).toBeNull();
  });

  it('returns only the letters offered', () => {
    expect(extractChoiceLetter('The answer is E.')).toBeNull();
    expect(extractChoiceLetter('The answer is E.', 'ABCDE')).toBe('E');
    expect(extractChoiceLetter('The answer is (J)', choiceLetters(10))).toBe('J');
    expect(extractChoiceLetter('The answer is (B) or maybe E', 'ABCD')).toBe('B');
    expect(extractChoiceLetter('**B**', ['A', 'C'])).toBeNull();
  });

  it('rejects letters that are not single capitals', () => {
    expect(() => extractChoiceLetter('A', ['a'])).toThrow(RangeError);
    expect(() => extractChoiceLetter('A', [])).toThrow(RangeError);
    expect(() => extractChoiceLetter('A', 'A-')).toThrow(RangeError);
  });
});
