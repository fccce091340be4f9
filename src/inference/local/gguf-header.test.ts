import { describe, expect, it } from 'vitest';
import { tokenizerMismatch } from './gguf-header.js';

const tokenizer = (ggml: Record<string, unknown> = {}, chat_template?: string) => ({
  ggml: { model: 'gpt2', tokens: ['a', 'b', 'c'], token_type: [1, 1, 3], eos_token_id: 2, ...ggml },
  ...(chat_template === undefined ? {} : { chat_template }),
});

describe('tokenizerMismatch', () => {
  it('accepts the same tokenizer, with or without the chat template', () => {
    expect(tokenizerMismatch(tokenizer({}, 'T'), tokenizer({}, 'T'))).toBeUndefined();
    expect(tokenizerMismatch(tokenizer({}, 'T'), tokenizer())).toBeUndefined();
  });

  it('names the first difference of the vocabulary, the special tokens or the template', () => {
    expect(tokenizerMismatch(tokenizer(), tokenizer({ tokens: ['a', 'b'] }))).toBe(
      "tokenizer.ggml.tokens has 2 entries, the served model's 3",
    );
    expect(tokenizerMismatch(tokenizer(), tokenizer({ tokens: ['a', 'x', 'c'] }))).toBe(
      'tokenizer.ggml.tokens[1] is "x", the served model\'s "b"',
    );
    expect(tokenizerMismatch(tokenizer(), tokenizer({ eos_token_id: 1 }))).toBe("tokenizer.ggml.eos_token_id is 1, the served model's 2");
    expect(tokenizerMismatch(tokenizer(), tokenizer({ add_bos_token: true }))).toBe(
      "tokenizer.ggml.add_bos_token is true, the served model's undefined",
    );
    expect(tokenizerMismatch(tokenizer({}, 'T'), tokenizer({}, 'U'))).toBe("tokenizer.chat_template differs from the served model's");
    expect(tokenizerMismatch(undefined, tokenizer())).toMatch(/^tokenizer\.ggml\.model is "gpt2"/);
  });
});
