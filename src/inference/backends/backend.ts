import { z } from 'zod';
import type { ServerConfig } from '../../config/schemas.js';
import { parseHotFirst } from '../../schema/number-rows.js';
import { callSignal } from '../call-signal.js';
import { classifyError, InferenceError, parseRetryAfter } from '../errors.js';
import type { Tokenizer } from '../tokenizer.js';
import {
  HotTokenGenerateRequestSchema,
  PROGRESS_INTERVAL_MS,
  TokenGenerateRequestSchema,
  type Completion,
  type GenerateOptions,
  type InferenceClient,
  type TokenGenerateRequest,
} from '../types.js';

/** A teacher's top-k logprobs at every position of a sequence (the first position has none: `[]`). */
export interface PromptLogprobs {
  tokenIds: number[][];
  logprobs: number[][];
}

/** One inference server, as the server manager drives it. */
/**
 * One inference server. Its requests were checked where they entered (the server manager, {@link parseRequest} and
 * {@link parseTokenRequest}): a backend does not check them again.
 */
export interface Backend extends InferenceClient {
  readonly config: ServerConfig;
  /** Resolves when the server answers its health probe; rejects otherwise. */
  checkHealth(signal: AbortSignal): Promise<void>;
  /** Present on backends that take a prompt as token ids. */
  generateTokens?(request: TokenGenerateRequest, options?: GenerateOptions): Promise<Completion[]>;
  /** Present on backends that return prompt logprobs (teachers). */
  promptLogprobs?(tokens: number[], topK: number, options?: GenerateOptions): Promise<PromptLogprobs>;
}

/** Loads a tokenizer by name (a Hub repo id, a directory or an alias such as `qwen3`). */
export type TokenizerLoader = (source: string) => Promise<Tokenizer>;

/** What {@link createBackend}-style factories share. */
export interface BackendOptions {
  /** @default loadTokenizer from `../tokenizer.js` */
  loadTokenizer?: TokenizerLoader;
}

/** The model's tokenizer, loaded on first use: `tokenizer_name`, or `model_name` when it is "none". */
export function lazyTokenizer(config: ServerConfig, load: TokenizerLoader): () => Promise<Tokenizer> {
  let loading: Promise<Tokenizer> | undefined;
  return () => {
    loading ??= load(config.tokenizer_name === 'none' ? config.model_name : config.tokenizer_name).catch((err: unknown) => {
      loading = undefined;
      throw new InferenceError('InvalidRequest', `cannot load the tokenizer of ${config.base_url}: ${String(err)}`, { cause: err });
    });
    return loading;
  };
}

/** The server's root: `base_url` without a trailing `/v1`, where native endpoints live. */
export function serverRoot(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** Parses a request or fails with a non-retryable `InvalidRequest`. */
export function parseRequest<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new InferenceError('InvalidRequest', z.prettifyError(parsed.error));
  return parsed.data;
}

/** Parses a request for continuations of a token-id prompt, its ids checked by a loop first. */
export function parseTokenRequest(value: unknown): TokenGenerateRequest {
  const parsed = parseHotFirst(HotTokenGenerateRequestSchema, TokenGenerateRequestSchema, value);
  if (!parsed.success) throw new InferenceError('InvalidRequest', z.prettifyError(parsed.error));
  return parsed.data;
}

/**
 * Parses a response body or fails with `MalformedResponse` (retryable: another server may answer well); `hot`, when
 * given, is tried first (`parseHotFirst`).
 */
export function parseResponse<T>(schema: z.ZodType<T>, value: unknown, what: string, hot?: z.ZodType<T>): T {
  const parsed = hot ? parseHotFirst(hot, schema, value) : schema.safeParse(value);
  if (!parsed.success) throw new InferenceError('MalformedResponse', `malformed ${what} response: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

export interface HttpCall {
  method?: 'GET' | 'POST';
  body?: unknown;
  apiKey?: string;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  onProgress?: (() => void) | undefined;
  /** @default 5000 */
  progressIntervalMs?: number;
}

/**
 * One JSON call to a native endpoint, failing with the failure table's types: a status maps as in
 * `classifyError`, an unparseable body is `MalformedResponse`, the deadline (headers and body) is
 * `Timeout`. A cancelled call rejects with the signal's reason.
 */
export async function callJson(url: string, call: HttpCall): Promise<unknown> {
  return (await callJsonWithHeaders(url, call)).body;
}

/** {@link callJson}, with the response's headers (where `clotho inference` tells its weights version). */
export async function callJsonWithHeaders(url: string, call: HttpCall): Promise<{ body: unknown; headers: Headers }> {
  const deadline = callSignal([call.signal], call.timeoutMs);
  const timer = call.onProgress ? setInterval(call.onProgress, call.progressIntervalMs ?? PROGRESS_INTERVAL_MS) : undefined;
  try {
    const response = await fetch(url, {
      method: call.method ?? 'POST',
      headers: {
        ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(call.apiKey ? { authorization: `Bearer ${call.apiKey}` } : {}),
      },
      ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
      signal: deadline.signal,
    });
    const text = await response.text();
    if (!response.ok) throw statusError(response, text);
    try {
      return { body: JSON.parse(text), headers: response.headers };
    } catch (err) {
      throw new InferenceError('MalformedResponse', `response is not JSON: ${text.slice(0, 200)}`, { cause: err });
    }
  } catch (err) {
    if (call.signal?.aborted) throw call.signal.reason;
    if (deadline.timedOut) throw new InferenceError('Timeout', `no answer from ${url} within ${call.timeoutMs} ms`, { cause: err });
    throw classifyError(err);
  } finally {
    deadline.release();
    clearInterval(timer);
  }
}

/** The server's own message: OpenAI's `error.message`, FastAPI's `detail`, or the body's start. */
function statusError(response: Response, text: string): InferenceError {
  let message = text.slice(0, 500) || response.statusText;
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; detail?: unknown; message?: unknown };
    const found = typeof body.error === 'object' ? body.error?.message : (body.error ?? body.detail ?? body.message);
    if (found !== undefined) message = typeof found === 'string' ? found : JSON.stringify(found);
  } catch {
    // Not JSON: the raw text is the message.
  }
  const status = response.status;
  const options = { status, retryAfterMs: parseRetryAfter(response.headers) };
  if (status === 429) return new InferenceError('RateLimited', message, options);
  if (status === 408) return new InferenceError('Timeout', message, options);
  if (status >= 500) return new InferenceError('ServerError', message, options);
  return new InferenceError('RequestRejected', message, options);
}

/** Checks that generated ids and their logprobs line up. */
export function checkAligned(tokenIds: number[], logprobs: number[], what: string): void {
  if (tokenIds.length !== logprobs.length) {
    throw new InferenceError('MalformedResponse', `${what}: ${tokenIds.length} token ids but ${logprobs.length} logprobs`);
  }
}
