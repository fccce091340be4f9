import { describe, expect, it } from 'vitest';
import { jsonlLine } from './float-json.js';

describe('jsonlLine', () => {
  it('writes the float fields as floats and every other field as JSON.stringify does, leaving out undefined ones', () => {
    const group = { tokens: [[1, 2]], scores: [2, 0.5], advantages: null, extra: undefined, messages: [[{ content: 'score 1' }]] };
    expect(jsonlLine(group)).toBe('{"tokens":[[1,2]],"scores":[2.0,0.5],"advantages":null,"messages":[[{"content":"score 1"}]]}');
    expect(jsonlLine([1])).toBe('[1]');
  });
});
