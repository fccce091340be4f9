import { z } from 'zod';
import type { ServerConfig } from '../../config/schemas.js';
import { type Completion, type GenerateOptions, type GenerateRequest, type TokenGenerateRequest } from '../types.js';
import { callJson, checkAligned, parseResponse, serverRoot, type Backend } from './backend.js';

const ints = z.array(z.number().int());

/** llama.cpp's `/completion` answer (non-OpenAI format), with `return_tokens` and `n_probs` set. */
const CompletionSchema = z.looseObject({
  content: z.string(),
  tokens: ints,
  /** `eos` | `word` (a stop string) | `limit` (n_predict reached) | `none`. */
  stop_type: z.string(),
  completion_probabilities: z.array(z.looseObject({ id: z.number().int(), logprob: z.number() })),
});
const TemplateSchema = z.looseObject({ prompt: z.string() });
const TokenizeSchema = z.looseObject({ tokens: ints });

const FINISH: Record<string, string> = { eos: 'stop', word: 'stop', limit: 'length' };

/**
 * A llama.cpp server backend (`llama-server`): the server renders the chat (`/apply-template`) and
 * tokenizes it (`/tokenize`), then `/completion` samples from the token ids with `n_probs` so each
 * generated token carries its logprob. `/completion` has no `n`: samples are separate requests,
 * with seeds `seed + i` so that a seeded group still differs. Health is `GET /health` (503 while
 * the model loads).
 */
export function createLlamaBackend(config: ServerConfig): Backend & Required<Pick<Backend, 'generateTokens'>> {
  const root = serverRoot(config.base_url);
  const timeoutMs = Math.ceil(config.timeout * 1000);
  const post = (path: string, body: unknown, o: GenerateOptions = {}) =>
    callJson(`${root}${path}`, { body, apiKey: config.api_key, timeoutMs, signal: o.signal, onProgress: o.onProgress });

  async function sample(r: TokenGenerateRequest, i: number, o?: GenerateOptions): Promise<Completion> {
    const body = {
      prompt: r.promptTokenIds,
      n_predict: r.maxTokens,
      temperature: r.temperature,
      top_p: r.topP,
      n_probs: 1,
      return_tokens: true,
      cache_prompt: true,
      ...(r.stop ? { stop: r.stop } : {}),
      ...(r.seed !== undefined ? { seed: r.seed + i } : {}),
    };
    const json = parseResponse(CompletionSchema, await post('/completion', body, o), 'llama.cpp /completion');
    const probabilities = json.completion_probabilities;
    const tokenIds = json.tokens.length > 0 ? json.tokens : probabilities.map((p) => p.id);
    const logprobs = probabilities.map((p) => p.logprob);
    checkAligned(tokenIds, logprobs, `llama.cpp sample ${i}`);
    return {
      text: json.content,
      message: { role: 'assistant', content: json.content },
      finishReason: FINISH[json.stop_type] ?? json.stop_type,
      promptTokenIds: r.promptTokenIds,
      tokenIds,
      logprobs,
    };
  }

  async function generateTokens(r: TokenGenerateRequest, o?: GenerateOptions): Promise<Completion[]> {
    return Promise.all(Array.from({ length: r.n }, (_, i) => sample(r, i, o)));
  }

  return {
    config,
    generateTokens,
    async generate(r: GenerateRequest, o?: GenerateOptions): Promise<Completion[]> {
      const template = await post(
        '/apply-template',
        {
          messages: r.messages,
          ...(r.tools ? { tools: r.tools } : {}),
          // Reasoning is asked for through the template's switch (Qwen3's enable_thinking), as llama-server takes it.
          ...(r.reasoning ? { chat_template_kwargs: { enable_thinking: true } } : {}),
        },
        o,
      );
      const { prompt } = parseResponse(TemplateSchema, template, 'llama.cpp /apply-template');
      // The template writes BOS itself where the model wants one; special-token text becomes ids.
      const tokenized = await post('/tokenize', { content: prompt, add_special: false, parse_special: true }, o);
      const { tokens } = parseResponse(TokenizeSchema, tokenized, 'llama.cpp /tokenize');
      const { n, maxTokens, temperature, topP, stop, seed } = r;
      return generateTokens({ promptTokenIds: tokens, n, maxTokens, temperature, topP, stop, seed }, o);
    },
    async checkHealth(signal) {
      await callJson(`${root}/health`, { method: 'GET', apiKey: config.api_key, timeoutMs, signal });
    },
  };
}
