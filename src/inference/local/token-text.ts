/**
 * GPT-2 byte-level BPE stores each byte as a printable code point; this inverts that table so a
 * token's exact bytes can be reported (OpenAI's `bytes` field), also for tokens that hold only part
 * of a UTF-8 character and so have no faithful string form.
 */
function byteDecoder(): Map<string, number> {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const decoder = new Map<string, number>();
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    const code = printable.includes(b) ? b : 256 + shifted++;
    decoder.set(String.fromCodePoint(code), b);
  }
  return decoder;
}

const DECODER = byteDecoder();

/** Token types from `tokenizer.ggml.token_type` whose text is literal rather than byte-encoded. */
const LITERAL_TYPES = new Set([3, 4]);

/** Exact bytes of each token of a byte-level BPE vocabulary. */
export class TokenBytes {
  constructor(
    private readonly tokens: readonly string[],
    private readonly types: readonly number[],
  ) {}

  /** Number of tokens in the vocabulary (0 when the file does not list them). */
  size(): number {
    return this.tokens.length;
  }

  /** The token's bytes, or undefined for an id outside the vocabulary. */
  bytes(id: number): Uint8Array | undefined {
    const text = this.tokens[id];
    if (text === undefined) return undefined;
    if (LITERAL_TYPES.has(this.types[id] ?? 1)) return new TextEncoder().encode(text);
    const out: number[] = [];
    for (const ch of text) {
      const b = DECODER.get(ch);
      if (b === undefined) return new TextEncoder().encode(text);
      out.push(b);
    }
    return Uint8Array.from(out);
  }
}
