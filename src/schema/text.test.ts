import { describe, expect, it } from 'vitest';
import { cut } from './text.js';

describe('cut', () => {
  it('keeps text of at most max characters as it is', () => {
    expect(cut('', 3)).toBe('');
    expect(cut('abc', 3)).toBe('abc');
  });

  it('cuts longer text to exactly max characters, the last one an ellipsis', () => {
    expect(cut('abcd', 3)).toBe('ab…');
    expect(cut('abcd', 3)).toHaveLength(3);
    expect(cut('x'.repeat(1000), 400)).toBe(`${'x'.repeat(399)}…`);
  });
});
