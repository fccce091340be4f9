import { describe, expect, it } from 'vitest';
import { problemsError } from './problems.js';

describe('problemsError', () => {
  it('lists every problem under the heading, one a line', () => {
    expect(problemsError('invalid data in a.jsonl', ['row 1: no field "q"', 'row 3: no gold answer']).message).toBe(
      'invalid data in a.jsonl:\n  row 1: no field "q"\n  row 3: no gold answer',
    );
  });

  it('lists the first ten and counts the rest', () => {
    const problems = Array.from({ length: 13 }, (_, i) => `row ${i + 1}: bad`);
    const lines = problemsError('invalid data in b.csv', problems).message.split('\n');
    expect(lines).toHaveLength(12);
    expect(lines[0]).toBe('invalid data in b.csv:');
    expect(lines.slice(1, 11)).toEqual(problems.slice(0, 10).map((p) => `  ${p}`));
    expect(lines[11]).toBe('  … and 3 more');
    expect(problemsError('x', problems.slice(0, 10)).message).not.toContain('more');
  });
});
