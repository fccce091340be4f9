import { describe, expect, it } from 'vitest';
import { cellText, renderTemplate, templateFields } from './data.js';

describe('prompt templates', () => {
  const template = 'Q ({subject}): {question}\nChoices: {choices}\nAnswer as \\boxed{{X}} for {question}.';

  it('names the columns its placeholders use, once each, and not escaped braces or LaTeX digits', () => {
    expect(templateFields(template)).toEqual(['subject', 'question', 'choices']);
    expect(templateFields('\\frac{1}{2} of {{n}}')).toEqual([]);
    expect(templateFields('no placeholders')).toEqual([]);
  });

  it('fills placeholders from a row: text as it is, lists as JSON, numbers and bigints as digits, missing as nothing', () => {
    const row = { subject: 'algebra', question: 'What is x?', choices: ['1', '2'], id: 7n };
    expect(renderTemplate(template, row)).toBe('Q (algebra): What is x?\nChoices: ["1","2"]\nAnswer as \\boxed{X} for What is x?.');
    expect(renderTemplate('#{id} {level}', { id: 7n, level: null })).toBe('#7 ');
  });

  it('writes cells as prompt text', () => {
    expect(cellText('a')).toBe('a');
    expect(cellText(2.5)).toBe('2.5');
    expect(cellText(12n)).toBe('12');
    expect(cellText(true)).toBe('true');
    expect(cellText({ a: [1n, 'b'] })).toBe('{"a":["1","b"]}');
    expect(cellText(undefined)).toBe('');
  });
});
