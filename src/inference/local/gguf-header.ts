import { stat } from 'node:fs/promises';
import { GgufInsights, readGgufFileInfo, type Llama } from 'node-llama-cpp';

/** A GGUF's `tokenizer.*` metadata as node-llama-cpp parses it: `ggml` (vocabulary, merges, special ids), `chat_template`. */
export type GgufTokenizer = Readonly<Record<string, unknown>> | undefined;

/** What a swap reads of a GGUF file before llama.cpp loads it. */
export interface GgufHeader {
  tokenizer: GgufTokenizer;
  /** Bytes the file lacks to hold the tensors its header lists: above 0 for a file cut short (still being written). */
  missingBytes: number;
}

/** Reads a GGUF file's header (its metadata and tensor list; no tensor data). Rejects a file that is not GGUF. */
export async function readGgufHeader(path: string, llama: Llama): Promise<GgufHeader> {
  const info = await readGgufFileInfo(path, { sourceType: 'filesystem', logWarnings: false });
  const { modelSize } = await GgufInsights.from(info, llama);
  const { size } = await stat(path);
  return { tokenizer: info.metadata.tokenizer as GgufTokenizer, missingBytes: Math.max(0, (info.infoEndOffset ?? 0) + modelSize - size) };
}

const show = (value: unknown) => (typeof value === 'string' ? JSON.stringify(value) : String(value));

/** How two metadata values differ ("has 3 entries, … 4"; "[7] is …, … "), or undefined when they are equal. */
function difference(key: string, next: unknown, served: unknown): string | undefined {
  if (Array.isArray(next) && Array.isArray(served)) {
    if (next.length !== served.length) return `${key} has ${next.length} entries, the served model's ${served.length}`;
    const at = next.findIndex((v, i) => v !== served[i]);
    return at === -1 ? undefined : `${key}[${at}] is ${show(next[at])}, the served model's ${show(served[at])}`;
  }
  return next === served ? undefined : `${key} is ${show(next)}, the served model's ${show(served)}`;
}

/**
 * Why weights with tokenizer `next` cannot replace weights with `served`, or undefined when they can: every
 * `tokenizer.ggml.*` key (vocabulary, token types, merges, special token ids and flags) is the same, and so is the
 * chat template when the new file has one (the server keeps rendering prompts with the template it started with).
 * Token ids mean the same tokens before and after a swap, so a trajectory's ids and its logprobs agree.
 */
export function tokenizerMismatch(served: GgufTokenizer, next: GgufTokenizer): string | undefined {
  const ggml = (t: GgufTokenizer) => (t?.ggml ?? {}) as Record<string, unknown>;
  const [a, b] = [ggml(next), ggml(served)];
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const why = difference(`tokenizer.ggml.${key}`, a[key], b[key]);
    if (why) return why;
  }
  const template = next?.chat_template;
  if (template === undefined || template === served?.chat_template) return undefined;
  return "tokenizer.chat_template differs from the served model's";
}
