import { z } from 'zod';
import type { ServerConfig } from '../../config/schemas.js';
import { loadTokenizer } from '../tokenizer.js';
import { type Completion, type GenerateOptions, type GenerateRequest, type TokenGenerateRequest } from '../types.js';
import { callJson, checkAligned, lazyTokenizer, parseResponse, serverRoot, type Backend, type BackendOptions } from './backend.js';

/** One sample of SGLang's native `/generate` answer (a list of these when `n` > 1). */
const SampleSchema = z.looseObject({
  text: z.string(),
  meta_info: z.looseObject({
    /** `{ type: 'stop' | 'length' | 'abort', ... }`; null while unfinished. */
    finish_reason: z.looseObject({ type: z.string() }).nullish(),
    /** `[logprob, token id, token text or null]` per generated token. */
    output_token_logprobs: z.array(z.tuple([z.number(), z.number().int()]).rest(z.unknown())),
  }),
});
const ResponseSchema = z.union([SampleSchema, z.array(SampleSchema)]);

/**
 * An SGLang backend over its native `POST /generate`: the prompt is rendered and tokenized with
 * the model's tokenizer, so the trajectory's prompt ids are exactly what the model saw. The answer's
 * text is returned as the assistant's content: tool calls are not parsed out of it. Health is
 * `GET /health`.
 */
export function createSglangBackend(
  config: ServerConfig,
  options: BackendOptions = {},
): Backend & Required<Pick<Backend, 'generateTokens'>> {
  const tokenizer = lazyTokenizer(config, options.loadTokenizer ?? loadTokenizer);
  const root = serverRoot(config.base_url);
  const timeoutMs = Math.ceil(config.timeout * 1000);

  async function generateTokens(r: TokenGenerateRequest, callOptions: GenerateOptions = {}): Promise<Completion[]> {
    const body = {
      input_ids: r.promptTokenIds,
      sampling_params: {
        max_new_tokens: r.maxTokens,
        temperature: r.temperature,
        top_p: r.topP,
        n: r.n,
        ...(r.stop ? { stop: r.stop } : {}),
        ...(r.seed !== undefined ? { sampling_seed: r.seed } : {}),
      },
      return_logprob: true,
      return_text_in_logprobs: false,
    };
    const json = await callJson(`${root}/generate`, {
      body,
      apiKey: config.api_key,
      timeoutMs,
      signal: callOptions.signal,
      onProgress: callOptions.onProgress,
    });
    const parsed = parseResponse(ResponseSchema, json, 'SGLang /generate');
    return (Array.isArray(parsed) ? parsed : [parsed]).map((sample, i) => {
      const tokenIds = sample.meta_info.output_token_logprobs.map((t) => t[1]);
      const logprobs = sample.meta_info.output_token_logprobs.map((t) => t[0]);
      checkAligned(tokenIds, logprobs, `SGLang sample ${i}`);
      return {
        text: sample.text,
        message: { role: 'assistant', content: sample.text },
        finishReason: sample.meta_info.finish_reason?.type ?? null,
        promptTokenIds: r.promptTokenIds,
        tokenIds,
        logprobs,
      };
    });
  }

  return {
    config,
    generateTokens,
    async generate(r: GenerateRequest, callOptions?: GenerateOptions): Promise<Completion[]> {
      const promptTokenIds = (await tokenizer()).encodeChat(r.messages, {
        addGenerationPrompt: true,
        ...(r.tools ? { tools: r.tools as Record<string, unknown>[] } : {}),
        // The prompt is rendered here, so reasoning is asked for through the template's switch (Qwen3's enable_thinking).
        ...(r.reasoning ? { extra: { enable_thinking: true } } : {}),
      });
      const { n, maxTokens, temperature, topP, stop, seed } = r;
      return generateTokens({ promptTokenIds, n, maxTokens, temperature, topP, stop, seed }, callOptions);
    },
    async checkHealth(signal) {
      await callJson(`${root}/health`, { method: 'GET', apiKey: config.api_key, timeoutMs, signal });
    },
  };
}
