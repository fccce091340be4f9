import { randomInt } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import {
  getLlama,
  LlamaLogLevel,
  type ControlledEvaluateInputItem,
  type Llama,
  type LlamaContext,
  type LlamaModel,
  type Token,
} from 'node-llama-cpp';
import { z } from 'zod';
import { streamSeed } from './random-weights.js';
import { alignSequence, SlotPool } from './slot-pool.js';
import { sampleOne, type SampleResult } from './sample-loop.js';
import { TokenBytes } from './token-text.js';

export type { SampleResult, SampledToken, TokenLogprob } from './sample-loop.js';

/** The parts of the GGUF's `tokenizer.*` metadata the engine uses. */
const GgufTokenizerSchema = z.object({
  tokenizer: z
    .object({
      chat_template: z.string().optional(),
      ggml: z.object({ tokens: z.array(z.string()).optional(), token_type: z.array(z.number()).optional() }).optional(),
    })
    .optional(),
});

/** Options of {@link LocalEngine.load}. */
export const EngineOptionsSchema = z.strictObject({
  modelPath: z.string().min(1),
  /** Name reported by `/v1/models`. @default the file name without `.gguf` */
  modelName: z.string().min(1).optional(),
  /** Sequences in the shared context: samples that run (and are batched) at once. @default 4 */
  slots: z.number().int().positive().default(4),
  /** Tokens each slot holds (prompt plus completion). @default 4096, capped by the model's training context */
  contextSize: z.number().int().positive().default(4096),
  /**
   * CPU threads. llama.cpp's threads spin while waiting, so on a small shared machine more threads
   * than free cores is many times slower, not faster. @default cores − 1 (at least 1)
   */
  threads: z.number().int().positive().optional(),
});
export type EngineOptions = z.input<typeof EngineOptionsSchema>;

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

/** One position of {@link LocalEngine.promptLogprobs}: the given token and the k most likely ones. */
export interface PromptPosition {
  id: Token;
  logprob: number;
  /** 1-based rank of the given token; known only when it is among the top k. */
  rank: number | null;
  top: Array<{ id: Token; logprob: number }>;
}

/** A request the engine cannot serve as asked (prompt too long, token id out of range): a client error. */
export class EngineRequestError extends Error {}

/**
 * An in-process llama.cpp (node-llama-cpp, CPU prebuilt binary, never compiled or downloaded)
 * serving one GGUF model. Samples run on the sequences of one shared context, so concurrent
 * requests are batched together by node-llama-cpp.
 */
export class LocalEngine {
  private constructor(
    private readonly llama: Llama,
    readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly pool: SlotPool,
    private readonly tokenBytes: TokenBytes,
    /** Name reported to clients. */
    readonly modelName: string,
    /** The Jinja chat template stored in the GGUF, if any. */
    readonly chatTemplate: string | undefined,
  ) {}

  /** Loads a GGUF file and creates its context with `slots` sequences. */
  static async load(options: EngineOptions): Promise<LocalEngine> {
    const o = EngineOptionsSchema.parse(options);
    const threads = o.threads ?? Math.max(1, availableParallelism() - 1);
    const llama = await getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: o.modelPath });
    const contextSize = Math.min(o.contextSize, model.trainContextSize);
    const context = await model.createContext({ sequences: o.slots, contextSize, threads });
    const sequences = Array.from({ length: o.slots }, () => context.getSequence());
    const { tokenizer } = GgufTokenizerSchema.parse(model.fileInfo.metadata);
    return new LocalEngine(
      llama,
      model,
      context,
      new SlotPool(sequences),
      new TokenBytes(tokenizer?.ggml?.tokens ?? [], tokenizer?.ggml?.token_type ?? []),
      o.modelName ?? basename(o.modelPath).replace(/\.gguf$/i, ''),
      tokenizer?.chat_template,
    );
  }

  /** Token ids of `text`; special-token text such as `<|im_start|>` becomes its single id. */
  tokenize(text: string): Token[] {
    return this.model.tokenize(text, true);
  }

  /** Text of `tokens`; control tokens (end of turn, padding) are left out unless `special`. */
  detokenize(tokens: readonly number[], special = false): string {
    return this.model.detokenize(tokens as Token[], special);
  }

  /** Exact bytes of one token. */
  tokenBytesOf(id: number): Uint8Array {
    return this.tokenBytes.bytes(id) ?? new TextEncoder().encode(this.detokenize([id], true));
  }

  /** Tokens each sequence holds. */
  get contextSize(): number {
    return this.context.contextSize;
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
    const vocab = this.tokenBytes.size() || Infinity;
    const bad = tokens.find((t) => t >= vocab);
    if (bad !== undefined) throw new EngineRequestError(`token id ${bad} is outside the vocabulary (${vocab} tokens)`);
    if (tokens.length + room > this.contextSize) {
      throw new EngineRequestError(`prompt of ${tokens.length} tokens does not fit the context of ${this.contextSize}`);
    }
  }

  /** Frees the context, the model and the llama.cpp instance. */
  async close(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }
}
