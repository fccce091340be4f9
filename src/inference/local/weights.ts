import { randomInt } from 'node:crypto';
import type { ControlledEvaluateInputItem, Llama, LlamaContext, LlamaModel, Token } from 'node-llama-cpp';
import { z } from 'zod';
import type { GgufTokenizer } from './gguf-header.js';
import { streamSeed } from './random-weights.js';
import { sampleOne, type SampleResult } from './sample-loop.js';
import { alignSequence, SlotPool } from './slot-pool.js';

/** Sampling parameters of one generation request (already validated by the caller's schema). */
export const GenerateParamsSchema = z.object({
  promptTokens: z.array(z.number().int().nonnegative()).min(1),
  n: z.number().int().positive().default(1),
  temperature: z.number().min(0).default(1),
  topP: z.number().gt(0).max(1).default(1),
  seed: z.number().int().optional(),
  maxTokens: z.number().int().positive().default(256),
  stop: z.array(z.string().min(1)).default([]),
  /** Whether to compute each sampled token's logprob (it costs a vocabulary sort per token). */
  logprobs: z.boolean().default(true),
  /** Alternatives reported per position (0 = only the sampled token's logprob); implies `logprobs`. */
  topLogprobs: z.number().int().min(0).max(100).default(0),
});
export type GenerateParams = z.input<typeof GenerateParamsSchema>;

/** One position of {@link Weights.promptLogprobs}: the given token and the k most likely ones. */
export interface PromptPosition {
  id: Token;
  logprob: number;
  /** 1-based rank of the given token; known only when it is among the top k. */
  rank: number | null;
  top: Array<{ id: Token; logprob: number }>;
}

/** A request the engine cannot serve as asked (prompt too long, token id out of range): a client error. */
export class EngineRequestError extends Error {}

/** How a context is made for loaded weights. */
export interface ContextOptions {
  slots: number;
  /** Capped by the model's training context. */
  contextSize: number;
  threads: number;
}

/**
 * One loaded GGUF as the engine serves it: its model, a context of `slots` sequences, and the version the trainer
 * gave it. Requests hold it while they run ({@link Weights.acquire}), so weights swapped out keep serving the
 * requests that started on them and are freed once the last one ends.
 */
export class Weights {
  private running = 0;
  private retired = false;
  private drained: (() => void) | undefined;
  private disposed: Promise<void> | undefined;

  private constructor(
    readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly pool: SlotPool,
    /** The weights version clients are told (`x-clotho-weights-version`). */
    readonly version: number,
    /** The GGUF file, absolute. */
    readonly path: string,
    /** The file's `tokenizer.*` metadata, which a swap must keep. */
    readonly tokenizer: GgufTokenizer,
  ) {}

  /** Loads `path` and creates its context; the model is freed again if the context cannot be made. */
  static async load(llama: Llama, path: string, version: number, o: ContextOptions): Promise<Weights> {
    const model = await llama.loadModel({ modelPath: path });
    try {
      const contextSize = Math.min(o.contextSize, model.trainContextSize);
      const context = await model.createContext({ sequences: o.slots, contextSize, threads: o.threads });
      const sequences = Array.from({ length: o.slots }, () => context.getSequence());
      const tokenizer = model.fileInfo.metadata.tokenizer as GgufTokenizer;
      return new Weights(model, context, new SlotPool(sequences), version, path, tokenizer);
    } catch (err) {
      await model.dispose();
      throw err;
    }
  }

  /** Tokens each sequence holds. */
  get contextSize(): number {
    return this.context.contextSize;
  }

  /** Counts a request in; {@link release} counts it out. */
  acquire(): void {
    this.running++;
  }

  release(): void {
    this.running--;
    if (this.retired && this.running === 0) this.drained?.();
  }

  /** No new request comes to these weights: they are freed once the running ones end (now, if none runs). */
  async retire(): Promise<void> {
    this.retired = true;
    if (this.running > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    await this.dispose();
  }

  /** Frees the context and the model (once, whoever asks first). */
  dispose(): Promise<void> {
    this.disposed ??= (async () => {
      await this.context.dispose();
      await this.model.dispose();
    })();
    return this.disposed;
  }

  /** Generates `n` independent samples from the prompt; with a seed, each sample is reproducible. */
  async generate(params: GenerateParams, signal?: AbortSignal): Promise<SampleResult[]> {
    const parsed = GenerateParamsSchema.parse(params);
    const p = { ...parsed, logprobs: parsed.logprobs || parsed.topLogprobs > 0 };
    this.checkPrompt(p.promptTokens, 1);
    const prompt = p.promptTokens as Token[];
    return Promise.all(
      Array.from({ length: p.n }, (_, i) => {
        const seed = p.seed === undefined ? randomInt(2 ** 32) : streamSeed(p.seed >>> 0, `sample:${i}`);
        return this.pool.with(prompt, (seq) => sampleOne({ seq, model: this.model, prompt, params: p, seed, signal }));
      }),
    );
  }

  /**
   * Log-probabilities of the model's raw (temperature 1, untruncated) next-token distribution at
   * every position of `tokens`: entry i describes `tokens[i]` given the tokens before it, and
   * entry 0 is null. `k` top alternatives are listed per position.
   */
  async promptLogprobs(tokens: readonly number[], k: number): Promise<Array<PromptPosition | null>> {
    this.checkPrompt(tokens, 0);
    const prompt = tokens as Token[];
    const includeTop = Math.max(1, k);
    const input: ControlledEvaluateInputItem[] = prompt.map((t, i) => {
      const next = prompt[i + 1];
      if (next === undefined) return t;
      const filter = { tokens: [next], includeTop };
      // Greedy sampling leaves the logits untouched, so the returned values are the raw logits.
      return [t, { generateNext: { logits: { filter }, totalLogitWeight: true, options: { temperature: 0 } } }];
    });
    const outputs = await this.pool.with([], async (seq) => {
      await alignSequence(seq, [], 0);
      return seq.controlledEvaluate(input);
    });
    return prompt.map((id, i) => {
      if (i === 0) return null;
      const next = outputs[i - 1]?.next;
      if (!next?.logits || next.totalLogitWeight === undefined) throw new Error(`no logits at position ${i}`);
      const entries = [...next.logits];
      const maxLogit = entries[0]![1];
      const logZ = maxLogit + Math.log(next.totalLogitWeight);
      const topIds = entries.slice(0, includeTop);
      const rank = topIds.findIndex(([t]) => t === id);
      return {
        id,
        logprob: next.logits.get(id)! - logZ,
        rank: rank === -1 ? null : rank + 1,
        top: topIds.slice(0, k).map(([t, l]) => ({ id: t, logprob: l - logZ })),
      };
    });
  }

  private checkPrompt(tokens: readonly number[], room: number): void {
    const vocabulary = (this.tokenizer?.ggml as { tokens?: unknown[] } | undefined)?.tokens;
    const vocab = vocabulary?.length || Infinity;
    const bad = tokens.find((t) => t >= vocab);
    if (bad !== undefined) throw new EngineRequestError(`token id ${bad} is outside the vocabulary (${vocab} tokens)`);
    if (tokens.length + room > this.contextSize) {
      throw new EngineRequestError(`prompt of ${tokens.length} tokens does not fit the context of ${this.contextSize}`);
    }
  }
}
