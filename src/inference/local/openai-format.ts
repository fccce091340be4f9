import type { LocalEngine, SampleResult, TokenLogprob } from './engine.js';
import type { PromptPosition } from './weights.js';

type Engine = Pick<LocalEngine, 'detokenize' | 'tokenBytesOf'>;

const tokenText = (engine: Engine, id: number): string => engine.detokenize([id], true);

function chatEntry(engine: Engine, t: { id: number; logprob: number }) {
  return { token: tokenText(engine, t.id), logprob: t.logprob, bytes: [...engine.tokenBytesOf(t.id)] };
}

/** `choices[].logprobs` of a chat completion: one entry per generated token, EOS included. */
export function chatLogprobs(engine: Engine, sample: SampleResult, topK: number) {
  return {
    content: sample.tokens.map((t) => ({
      ...chatEntry(engine, { id: t.id, logprob: t.logprob ?? 0 }),
      top_logprobs: (t.top ?? []).slice(0, topK).map((a) => chatEntry(engine, a)),
    })),
  };
}

/** `choices[].logprobs` of a legacy completion (`logprobs: k`). */
export function completionLogprobs(engine: Engine, sample: SampleResult, topK: number) {
  const tokens = sample.tokens.map((t) => tokenText(engine, t.id));
  let offset = 0;
  const text_offset = tokens.map((s) => {
    const at = offset;
    offset += s.length;
    return at;
  });
  const top = (alts: TokenLogprob[] | undefined) =>
    Object.fromEntries((alts ?? []).slice(0, topK).map((a) => [tokenText(engine, a.id), a.logprob]));
  return {
    tokens,
    token_logprobs: sample.tokens.map((t) => t.logprob ?? 0),
    top_logprobs: topK > 0 ? sample.tokens.map((t) => top(t.top)) : null,
    text_offset,
  };
}

/** vLLM's `prompt_logprobs`: per position a map from token id to its logprob, rank and text. */
export function promptLogprobsVllm(engine: Engine, positions: Array<PromptPosition | null>) {
  return positions.map((p) => {
    if (p === null) return null;
    const entries: Record<string, { logprob: number; rank: number | null; decoded_token: string }> = {};
    p.top.forEach((a, i) => {
      entries[String(a.id)] = { logprob: a.logprob, rank: i + 1, decoded_token: tokenText(engine, a.id) };
    });
    entries[String(p.id)] = { logprob: p.logprob, rank: p.rank, decoded_token: tokenText(engine, p.id) };
    return entries;
  });
}

/** Token counts of a response. */
export function usage(promptTokens: number, samples: readonly SampleResult[]) {
  const completion = samples.reduce((n, s) => n + s.tokens.length, 0);
  return { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
}

/** One `{ "<id>": logprob }` per entry: a list, because an object would order integer-like keys by value. */
const idEntries = (entries: readonly TokenLogprob[]) => entries.map((e) => ({ [String(e.id)]: e.logprob }));

/**
 * `logprobs` of vLLM's `/generate` for one sample: per token the sampled `{ "<id>": logprob }` first (Atropos's
 * VLLMServer reads the first as the sampled token), then the `topK` alternatives.
 */
export function generateLogprobs(sample: SampleResult, topK: number): Array<Array<Record<string, number>>> {
  return sample.tokens.map((t) => {
    const alternatives = (t.top ?? []).slice(0, topK).filter((a) => a.id !== t.id);
    return idEntries([{ id: t.id, logprob: t.logprob ?? 0 }, ...alternatives]);
  });
}

/**
 * `prompt_logprobs` of vLLM's `/generate`, as Atropos's `get_logprobs` reads it: null for the first position, then
 * the top k by rank and the prompt's own token when it is not among them.
 */
export function generatePromptLogprobs(positions: Array<PromptPosition | null>): Array<Array<Record<string, number>> | null> {
  return positions.map((p) => (p === null ? null : idEntries(p.top.some((a) => a.id === p.id) ? p.top : [...p.top, p])));
}
