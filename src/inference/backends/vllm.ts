import { z } from 'zod';
import type { ServerConfig } from '../../config/schemas.js';
import { intArray, intRows, isNumberRecord } from '../../schema/number-rows.js';
import { InferenceError } from '../errors.js';
import { type Completion, type GenerateOptions, type TokenGenerateRequest } from '../types.js';
import { stampWeightsVersion } from '../weights-version.js';
import {
  callJson,
  callJsonWithHeaders,
  checkAligned,
  parseResponse,
  serverRoot,
  type Backend,
  type BackendOptions,
  type PromptLogprobs,
} from './backend.js';
import { createOpenAIBackend } from './openai.js';

const ints = z.array(z.number().int());
const topLogprobs = z.array(z.array(z.array(z.record(z.string(), z.number())).min(1)));

/** The answer of the native `/generate` endpoint Atropos's vLLM server adds (ATROPOS-API.md §4.4). */
const generateResponse = (
  tokenIds: z.ZodType<number[]>,
  tokenIdRows: z.ZodType<number[][]>,
  logprobs: z.ZodType<z.output<typeof topLogprobs>>,
) =>
  z.looseObject({
    text: z.array(z.string()),
    finish_reasons: z.array(z.string().nullable()),
    /** Per output, per token: `[{ "<token id>": logprob, ... }]`. */
    logprobs,
    token_ids: tokenIdRows.optional(),
    prompt_token_ids: tokenIds.optional(),
  });
const GenerateResponseSchema = generateResponse(ints, z.array(ints), topLogprobs);
/** The same, its per-token arrays checked by loops (`number-rows.ts`). */
const HotGenerateResponseSchema = generateResponse(intArray, intRows, z.custom<z.output<typeof topLogprobs>>(isTopLogprobs));

/** Per output, per token, at least one `{ "<token id>": logprob }` record. */
function isTopLogprobs(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const output of value) {
    if (!Array.isArray(output)) return false;
    for (const position of output) {
      if (!Array.isArray(position) || position.length === 0) return false;
      for (const record of position) if (!isNumberRecord(record)) return false;
    }
  }
  return true;
}

/** One position of vLLM's `prompt_logprobs`: null for the first, else `{ "<token id>": { logprob, rank } }`. */
const PromptPositionSchema = z.record(z.string(), z.looseObject({ logprob: z.number(), rank: z.number().nullish() })).nullable();
const CompletionsResponseSchema = z.looseObject({
  choices: z.array(z.looseObject({ prompt_logprobs: z.array(PromptPositionSchema).nullish() })).min(1),
  prompt_logprobs: z.array(PromptPositionSchema).nullish(),
});

/**
 * A vLLM backend: chat through the OpenAI server with vLLM's token-id extensions (see
 * `createOpenAIBackend`), continuations of token-id prompts through the native `/generate`
 * endpoint, and a teacher's prompt logprobs through `/v1/completions` with `prompt_logprobs`.
 * Health is `GET /health`.
 */
export function createVllmBackend(
  config: ServerConfig,
  options: BackendOptions = {},
): Backend & Required<Pick<Backend, 'generateTokens' | 'promptLogprobs'>> {
  const chat = createOpenAIBackend(config, options);
  const root = serverRoot(config.base_url);
  const timeoutMs = Math.ceil(config.timeout * 1000);
  const http = (callOptions: GenerateOptions = {}) => ({
    apiKey: config.api_key,
    timeoutMs,
    signal: callOptions.signal,
    onProgress: callOptions.onProgress,
  });

  return {
    config,
    generate: chat.generate,
    async checkHealth(signal) {
      await callJson(`${root}/health`, { method: 'GET', apiKey: config.api_key, timeoutMs, signal });
    },

    async generateTokens(r: TokenGenerateRequest, callOptions?: GenerateOptions): Promise<Completion[]> {
      const body = {
        prompt: { prompt_token_ids: r.promptTokenIds },
        logprobs: 0,
        n: r.n,
        max_tokens: r.maxTokens,
        temperature: r.temperature,
        top_p: r.topP,
        ...(r.stop ? { stop: r.stop } : {}),
        ...(r.seed !== undefined ? { seed: r.seed } : {}),
      };
      const answer = await callJsonWithHeaders(`${root}/generate`, { ...http(callOptions), body });
      const json = parseResponse(GenerateResponseSchema, answer.body, 'vLLM /generate', HotGenerateResponseSchema);
      const completions = json.logprobs.map((perToken, i) => {
        const ids = json.token_ids?.[i];
        // With `logprobs: 0` each entry holds the sampled token only; with more, the sampled id picks it.
        const tokenIds = ids ?? perToken.map((entry) => Number(Object.keys(entry[0]!)[0]));
        const logprobs = perToken.map((entry, j) => sampledLogprob(entry[0]!, tokenIds[j]));
        checkAligned(tokenIds, logprobs, `vLLM /generate output ${i}`);
        const text = json.text[i] ?? '';
        return {
          text,
          message: { role: 'assistant', content: text },
          finishReason: json.finish_reasons[i] ?? null,
          promptTokenIds: json.prompt_token_ids ?? r.promptTokenIds,
          tokenIds,
          logprobs,
        };
      });
      return stampWeightsVersion(completions, answer.headers);
    },

    async promptLogprobs(tokens: number[], topK: number, callOptions?: GenerateOptions): Promise<PromptLogprobs> {
      const body = {
        model: config.model_name,
        prompt: tokens,
        max_tokens: 1,
        temperature: 0,
        top_p: 1,
        n: 1,
        // 0 asks for the prompt's own token only (Atropos's "selected-token-only").
        prompt_logprobs: Math.max(0, topK),
      };
      const json = parseResponse(
        CompletionsResponseSchema,
        await callJson(`${root}/v1/completions`, { ...http(callOptions), body }),
        'vLLM prompt_logprobs',
      );
      const positions = json.choices[0]!.prompt_logprobs ?? json.prompt_logprobs;
      if (!positions || positions.length !== tokens.length) {
        throw new InferenceError(
          'MalformedResponse',
          `asked for prompt logprobs of ${tokens.length} tokens, got ${positions?.length ?? 'none'}`,
        );
      }
      const tokenIds: number[][] = [];
      const logprobs: number[][] = [];
      positions.forEach((position, i) => {
        const top = topEntries(position ?? {}, topK, tokens[i]!);
        tokenIds.push(top.map(([id]) => id));
        logprobs.push(top.map(([, lp]) => lp));
      });
      return { tokenIds, logprobs };
    },
  };
}

function sampledLogprob(entry: Record<string, number>, tokenId: number | undefined): number {
  const value = entry[String(tokenId)] ?? (Object.keys(entry).length === 1 ? Object.values(entry)[0] : undefined);
  if (value === undefined) throw new InferenceError('MalformedResponse', `vLLM /generate: no logprob for sampled token ${tokenId}`);
  return value;
}

/**
 * The `topK` best entries of one position, by rank (then logprob). vLLM adds the prompt's own token
 * when it is outside the top k, so that extra entry is dropped; `topK` 0 keeps only that token.
 */
function topEntries(
  position: Record<string, { logprob: number; rank?: number | null | undefined }>,
  topK: number,
  own: number,
): [number, number][] {
  const entries = Object.entries(position).map(([id, e]) => ({ id: Number(id), logprob: e.logprob, rank: e.rank ?? Infinity }));
  if (topK <= 0) return entries.filter((e) => e.id === own).map((e) => [e.id, e.logprob]);
  entries.sort((a, b) => a.rank - b.rank || b.logprob - a.logprob);
  return entries.slice(0, topK).map((e) => [e.id, e.logprob]);
}
