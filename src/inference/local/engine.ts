import { availableParallelism } from 'node:os';
import { basename, resolve } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama, type Token } from 'node-llama-cpp';
import { z } from 'zod';
import { readGgufHeader, tokenizerMismatch } from './gguf-header.js';
import type { SampleResult } from './sample-loop.js';
import { TokenBytes } from './token-text.js';
import { Weights, type ContextOptions, type GenerateParams, type PromptPosition } from './weights.js';

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
  /** The version of the weights loaded at start (a trainer resuming at step N gives N). @default 0 */
  weightsVersion: z.number().int().nonnegative().default(0),
});
export type EngineOptions = z.input<typeof EngineOptionsSchema>;

/** What {@link LocalEngine.swapWeights} asks for: a GGUF file on this machine and the version it is. */
export interface WeightsRequest {
  path: string;
  version: number;
}

/** The weights served after a swap; `loaded` is false when they already were (a repeated request). */
export interface WeightsSwap {
  version: number;
  /** Absolute. */
  path: string;
  /** Reading, checking and loading the file and making its context, in ms (0 when nothing was loaded). */
  loadMs: number;
  loaded: boolean;
}

/** A swap refused: its HTTP status, the field at fault and why. The weights served before still are. */
export class WeightsRefusedError extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    readonly param: 'path' | 'version',
    message: string,
  ) {
    super(message);
  }
}

/**
 * An in-process llama.cpp (node-llama-cpp, CPU prebuilt binary, never compiled or downloaded)
 * serving one GGUF model. Samples run on the sequences of one shared context, so concurrent
 * requests are batched together by node-llama-cpp. A trainer swaps new weights in without a restart
 * ({@link swapWeights}); each request runs whole on the weights it started on ({@link withWeights}).
 */
export class LocalEngine {
  /** Every loaded weights not yet freed: the served ones and those swapped out while requests still run on them. */
  private readonly live = new Set<Weights>();
  private swaps: Promise<unknown> = Promise.resolve();
  /** Whether llama.cpp failed to load a swap's file (see {@link close}). */
  private failedLoad = false;

  private constructor(
    private readonly llama: Llama,
    private served: Weights,
    private readonly contextOptions: ContextOptions,
    private readonly tokenBytes: TokenBytes,
    /** Name reported to clients. */
    readonly modelName: string,
    /** The Jinja chat template stored in the GGUF, if any. */
    readonly chatTemplate: string | undefined,
  ) {
    this.live.add(served);
  }

  /** Loads a GGUF file and creates its context with `slots` sequences. */
  static async load(options: EngineOptions): Promise<LocalEngine> {
    const o = EngineOptionsSchema.parse(options);
    const threads = o.threads ?? Math.max(1, availableParallelism() - 1);
    const llama = await getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: LlamaLogLevel.error });
    const contextOptions = { slots: o.slots, contextSize: o.contextSize, threads };
    let weights: Weights;
    try {
      weights = await Weights.load(llama, resolve(o.modelPath), o.weightsVersion, contextOptions);
    } catch (err) {
      await llama.dispose();
      throw err;
    }
    const { tokenizer } = GgufTokenizerSchema.parse(weights.model.fileInfo.metadata);
    return new LocalEngine(
      llama,
      weights,
      contextOptions,
      new TokenBytes(tokenizer?.ggml?.tokens ?? [], tokenizer?.ggml?.token_type ?? []),
      o.modelName ?? basename(o.modelPath).replace(/\.gguf$/i, ''),
      tokenizer?.chat_template,
    );
  }

  /** The weights served now: the version clients are told and the GGUF file (absolute). */
  get weights(): { version: number; path: string } {
    return { version: this.served.version, path: this.served.path };
  }

  /** Weights in memory: the served ones, and those swapped out that requests still run on. */
  get loadedWeights(): number {
    return this.live.size;
  }

  /**
   * Runs `fn` on the weights served now. A swap meanwhile does not touch them: `fn` finishes on them, and they are
   * freed once every call that started on them has ended.
   */
  async withWeights<T>(fn: (weights: Weights) => Promise<T>): Promise<T> {
    const weights = this.served;
    weights.acquire();
    try {
      return await fn(weights);
    } finally {
      weights.release();
    }
  }

  /** Token ids of `text`; special-token text such as `<|im_start|>` becomes its single id. */
  tokenize(text: string): Token[] {
    // Every weights ever served has the same tokenizer (swapWeights checks), so the served model's will do.
    return this.served.model.tokenize(text, true);
  }

  /** Text of `tokens`; control tokens (end of turn, padding) are left out unless `special`. */
  detokenize(tokens: readonly number[], special = false): string {
    return this.served.model.detokenize(tokens as Token[], special);
  }

  /** Exact bytes of one token. */
  tokenBytesOf(id: number): Uint8Array {
    return this.tokenBytes.bytes(id) ?? new TextEncoder().encode(this.detokenize([id], true));
  }

  /** Tokens each sequence of the served weights holds. */
  get contextSize(): number {
    return this.served.contextSize;
  }

  /** Generates `n` independent samples from the prompt on the served weights (see {@link Weights.generate}). */
  generate(params: GenerateParams, signal?: AbortSignal): Promise<SampleResult[]> {
    return this.withWeights((w) => w.generate(params, signal));
  }

  /** Prompt logprobs under the served weights (see {@link Weights.promptLogprobs}). */
  promptLogprobs(tokens: readonly number[], k: number): Promise<Array<PromptPosition | null>> {
    return this.withWeights((w) => w.promptLogprobs(tokens, k));
  }

  /**
   * Serves the GGUF at `path` as `version` from now on, without a restart: requests that start after it resolves run
   * on the new weights, those already running finish on the old ones, which are freed once the last has. The file
   * must have the served model's vocabulary and tokenizer. For a trainer that retries after a crash, asking again for
   * the version served from the same file changes nothing; an older version, or the served version from another
   * file, is refused. Swaps run one at a time.
   */
  swapWeights(request: WeightsRequest): Promise<WeightsSwap> {
    const swap = this.swaps.then(() => this.swap(request));
    this.swaps = swap.catch(() => undefined);
    return swap;
  }

  private async swap({ path: given, version }: WeightsRequest): Promise<WeightsSwap> {
    const path = resolve(given);
    const served = this.served;
    if (version === served.version && path === served.path) return { version, path, loadMs: 0, loaded: false };
    if (version < served.version) {
      throw new WeightsRefusedError(409, 'version', `version ${version} is older than version ${served.version}, which is served`);
    }
    if (version === served.version) {
      const message = `version ${version} is served from ${served.path}, not ${path}; new weights need a new version`;
      throw new WeightsRefusedError(409, 'version', message);
    }
    const started = performance.now();
    const header = await readGgufHeader(path, this.llama).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new WeightsRefusedError(404, 'path', `no file at ${path}`);
      throw new WeightsRefusedError(400, 'path', `${path} is not a GGUF file: ${errorText(err)}`);
    });
    if (header.missingBytes > 0) {
      const message = `${path} is cut short: its tensors need ${header.missingBytes} more bytes (write it elsewhere, then rename it into place)`;
      throw new WeightsRefusedError(400, 'path', message);
    }
    const mismatch = tokenizerMismatch(served.tokenizer, header.tokenizer);
    if (mismatch)
      throw new WeightsRefusedError(409, 'path', `${path} has another vocabulary or tokenizer than the served model: ${mismatch}`);
    const next = await Weights.load(this.llama, path, version, this.contextOptions).catch((err: unknown) => {
      this.failedLoad = true;
      throw new WeightsRefusedError(400, 'path', `${path} is not a loadable GGUF: ${errorText(err)}`);
    });
    this.served = next;
    this.live.add(next);
    // A failed free costs memory, not correctness: the weights are forgotten either way.
    const forget = () => void this.live.delete(served);
    void served.retire().then(forget, forget);
    return { version, path, loadMs: Math.round(performance.now() - started), loaded: true };
  }

  /** Frees every loaded weights (requests still running on them fail) and the llama.cpp instance. */
  async close(): Promise<void> {
    await this.swaps;
    await Promise.all([...this.live].map((w) => w.dispose()));
    const disposed = this.llama.dispose();
    // node-llama-cpp (3.22) keeps a hold on its llama.cpp instance for a model that failed to load, and never lets
    // it go once that model is garbage collected: its dispose would then wait forever, and `clotho inference` never
    // exit. Its models are freed above; the instance itself goes with the process.
    if (this.failedLoad) void disposed.catch(() => undefined);
    else await disposed;
  }
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));
