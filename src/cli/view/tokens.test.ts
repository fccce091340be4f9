import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../inference/tokenizer.js';
import type { RawGroup } from './model.js';
import { tokenDecoders, tokenizerMatches } from './tokens.js';

const ANSWER = 'The answer is \\boxed{42}.';
const groupOf = (completion: number[]): RawGroup => ({
  scores: [1],
  messages: [
    [
      { role: 'user', content: 'Q' },
      { role: 'assistant', content: ANSWER },
    ],
  ],
  tokens: [[9, 9, ...completion]],
  masks: [[-100, -100, ...completion]],
  logprobs: [null],
  overrides: [null],
  groupOverrides: null,
  tools: null,
  parsed: null,
});

describe('choosing how tokens are shown', async () => {
  const qwen = await loadTokenizer('qwen3');
  const qwenGroup = groupOf(qwen.encode(`${ANSWER}<|im_end|>`, { addSpecialTokens: false }));
  const codePoints = groupOf(Array.from(ANSWER, (c) => c.codePointAt(0)!));

  it("takes a tokenizer for a run only when it gives back the run's assistant text", () => {
    expect(tokenizerMatches(qwen, qwenGroup)).toBe(true);
    expect(tokenizerMatches(qwen, codePoints)).toBe(false);
    expect(tokenizerMatches(qwen, { ...qwenGroup, messages: [[{ role: 'user', content: 'Q' }]] })).toBeUndefined();
  });

  it('decodes, per run, with auto: pieces for the run that fits, ids for the one that does not', async () => {
    const decoders = tokenDecoders(async () => qwen, true);
    const fits = await decoders.forRun('a', qwenGroup);
    expect(fits.decode(qwenGroup.tokens[0]!.slice(2))!.join('')).toBe(`${ANSWER}<|im_end|>`);
    expect((await decoders.forRun('b', codePoints)).decode([65])).toBeNull();
    // The decision sticks to the run, whichever group is opened next.
    expect((await decoders.forRun('b', qwenGroup)).decode([65])).toBeNull();
  });
});
