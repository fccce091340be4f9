import type { ControlledEvaluateIndexOutput, ControlledEvaluateInputItem, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import { streamSeed } from './random-weights.js';
import { alignSequence } from './slot-pool.js';

/** A token id with its log-probability. */
export interface TokenLogprob {
  id: Token;
  logprob: number;
}

/** A sampled token; `logprob` is null when the request did not ask for logprobs. */
export interface SampledToken {
  id: Token;
  logprob: number | null;
  top?: TokenLogprob[];
}

/**
 * One completion. `tokens` includes the end-of-generation token when the model stopped by itself
 * (as vLLM's `token_ids` do), and the token that completed a stop string; `text` excludes both.
 */
export interface SampleResult {
  tokens: SampledToken[];
  text: string;
  finishReason: 'stop' | 'length';
}

interface SampleInput {
  seq: LlamaContextSequence;
  model: LlamaModel;
  prompt: Token[];
  params: { temperature: number; topP: number; maxTokens: number; stop: string[]; logprobs: boolean; topLogprobs: number };
  seed: number;
  signal?: AbortSignal;
}

type NextOptions = NonNullable<Extract<ControlledEvaluateInputItem, unknown[]>[1]['generateNext']>;

/**
 * Sampler options. node-llama-cpp fills a missing topK/topP with 40/0.95; `null` instead removes
 * that sampler, which gives OpenAI semantics (no top-k) and avoids sorting the whole vocabulary at
 * every step. The seed is derived per step because each `controlledEvaluate` call starts a fresh
 * sampler, whose random stream would otherwise repeat its first draw. Any logprob makes the addon
 * sort the whole vocabulary once per token (about 10 ms for Qwen's 151k tokens), so it is asked
 * for only when wanted.
 */
function nextOptions(p: SampleInput['params'], seed: number, step: number): NextOptions {
  const options = { temperature: p.temperature, seed: streamSeed(seed, String(step)), topK: null, topP: p.topP < 1 ? p.topP : null };
  const base = { token: true, options: options as unknown as NextOptions['options'] };
  if (!p.logprobs) return base;
  if (p.topLogprobs === 0) return { ...base, confidence: true };
  return { ...base, logits: { filter: { tokens: [], includeSelected: true, includeTop: p.topLogprobs } }, totalLogitWeight: true };
}

/**
 * Logprobs are of the distribution the token was drawn from: the model's logits divided by the
 * temperature and, when top_p < 1, truncated to the nucleus and renormalised (vLLM's
 * `processed_logprobs`). At temperature 1 and top_p 1 this is the raw model distribution (vLLM's
 * default `raw_logprobs`); at temperature 0 (greedy) it is the raw distribution too.
 */
function readLogprobs(id: Token, next: ControlledEvaluateIndexOutput['next'], p: SampleInput['params']): SampledToken {
  const k = p.topLogprobs;
  if (!p.logprobs) return { id, logprob: null };
  if (k === 0) return { id, logprob: Math.log(next.confidence!) };
  const entries = [...next.logits!];
  const logZ = entries[0]![1] + Math.log(next.totalLogitWeight!);
  return {
    id,
    logprob: next.logits!.get(id)! - logZ,
    top: entries.slice(0, k).map(([t, l]) => ({ id: t, logprob: l - logZ })),
  };
}

function findStop(text: string, stops: readonly string[], from: number): number {
  let hit = -1;
  for (const s of stops) {
    const i = text.indexOf(s, from);
    if (i !== -1 && (hit === -1 || i < hit)) hit = i;
  }
  return hit;
}

/** Generates one sample on a lent sequence, reusing whatever prefix of the prompt it already holds. */
export async function sampleOne(input: SampleInput): Promise<SampleResult> {
  const { seq, model, prompt, params: p } = input;
  const cached = await alignSequence(seq, prompt, prompt.length - 1);
  let pending = prompt.slice(cached);
  const tokens: SampledToken[] = [];
  const textTokens: Token[] = [];
  let text = '';
  // A new token can rewrite the last few characters (a completed multi-byte character), so search a bit back.
  const lookBack = Math.max(0, ...p.stop.map((s) => s.length)) + 4;
  for (let step = 0; step < p.maxTokens; step++) {
    input.signal?.throwIfAborted();
    if (seq.nextTokenIndex + pending.length >= seq.contextSize) break;
    const last = pending.length - 1;
    const items = pending.map((t, i): ControlledEvaluateInputItem =>
      i === last ? [t, { generateNext: nextOptions(p, input.seed, step) }] : t,
    );
    const next = (await seq.controlledEvaluate(items))[last]?.next;
    const id = next?.token;
    if (next === undefined || id === undefined || id === null) throw new Error('llama.cpp sampled no token');
    tokens.push(readLogprobs(id, next, p));
    if (model.isEogToken(id)) return { tokens, text, finishReason: 'stop' };
    textTokens.push(id);
    const before = text.length;
    text = model.detokenize(textTokens);
    const hit = findStop(text, p.stop, Math.max(0, before - lookBack));
    if (hit !== -1) return { tokens, text: text.slice(0, hit), finishReason: 'stop' };
    pending = [id];
  }
  return { tokens, text, finishReason: 'length' };
}
