import type { ServerConfig } from '../../config/schemas.js';
import { InferenceError } from '../errors.js';
import { createOpenAIClient } from '../openai-client.js';
import { loadTokenizer, type Tokenizer } from '../tokenizer.js';
import { type Completion, type GenerateOptions, type GenerateRequest, type TokenGenerateRequest } from '../types.js';
import { z } from 'zod';
import { stampWeightsVersion } from '../weights-version.js';
import { callJson, callJsonWithHeaders, checkAligned, lazyTokenizer, parseResponse, type Backend, type BackendOptions } from './backend.js';

// `/v1/completions` with a token-id prompt, as vLLM's OpenAI server and the embedded engine answer it.
const CompletionsResponseSchema = z.looseObject({
  choices: z.array(
    z.looseObject({
      text: z.string(),
      finish_reason: z.string().nullable(),
      token_ids: z.array(z.number().int()).nullish(),
      logprobs: z.looseObject({ token_logprobs: z.array(z.number()) }).nullish(),
    }),
  ),
});

/**
 * The message of the error a completion without logprobs fails with: a trajectory needs the
 * sampling policy's logprob of every generated token (`inference_logprobs`), and only the server
 * can tell them.
 */
export const NO_LOGPROBS_MESSAGE =
  'the inference server returned no logprobs, so the trajectory cannot carry inference_logprobs; ' +
  'use a server that returns them (--openai.server_type vllm, sglang or llama); clotho evaluate and clotho process --env.messages_only need none';

/**
 * A backend for any OpenAI-compatible chat endpoint. Token ids come from the server when it returns
 * them (vLLM's `return_token_ids`); otherwise the model's tokenizer (`tokenizer_name`, or `model_name`
 * when that is "none") renders the prompt and encodes the answer, and the server's
 * `logprobs.content` must have exactly one entry per encoded token: a mismatch fails as
 * `MalformedResponse` rather than inventing numbers. A `messagesOnly` request needs none of this: its completions
 * come back as the server sent them. Its health probe is `GET {base_url}/models`,
 * which every OpenAI-compatible server has and which costs no tokens.
 */
export function createOpenAIBackend(config: ServerConfig, options: BackendOptions = {}): Backend {
  const client = createOpenAIClient(config);
  const tokenizer = lazyTokenizer(config, options.loadTokenizer ?? loadTokenizer);
  const timeoutMs = Math.ceil(config.timeout * 1000);
  return {
    config,
    async generate(request: GenerateRequest, callOptions?: GenerateOptions): Promise<Completion[]> {
      const completions = await client.generate(request, callOptions);
      if (request.messagesOnly || completions.every((c) => c.tokenIds && c.promptTokenIds && c.logprobs)) return completions;
      // What the server lacks is said before a tokenizer is looked for: its name may be no tokenizer at all (gpt-4o).
      if (completions.some((c) => !c.logprobs)) throw new InferenceError('InvalidRequest', NO_LOGPROBS_MESSAGE);
      const loaded = await tokenizer();
      return completions.map((c) => tokenizeLocally(c, request, loaded));
    },
    async checkHealth(signal: AbortSignal): Promise<void> {
      await callJson(`${config.base_url.replace(/\/+$/, '')}/models`, { method: 'GET', apiKey: config.api_key, timeoutMs, signal });
    },
    /** A prompt given as token ids, through `/completions` (an OpenAI prompt may be a list of ids). */
    async generateTokens(r: TokenGenerateRequest, callOptions?: GenerateOptions): Promise<Completion[]> {
      const body = {
        model: config.model_name,
        prompt: r.promptTokenIds,
        n: r.n,
        max_tokens: r.maxTokens,
        temperature: r.temperature,
        top_p: r.topP,
        logprobs: 0,
        return_token_ids: true,
        ...(r.stop ? { stop: r.stop } : {}),
        ...(r.seed !== undefined ? { seed: r.seed } : {}),
      };
      const url = `${config.base_url.replace(/\/+$/, '')}/completions`;
      const call = { body, apiKey: config.api_key, timeoutMs, signal: callOptions?.signal, onProgress: callOptions?.onProgress };
      const { body: answer, headers } = await callJsonWithHeaders(url, call);
      const json = parseResponse(CompletionsResponseSchema, answer, 'completions');
      if (json.choices.length !== r.n)
        throw new InferenceError('WrongChoiceCount', `asked for ${r.n} completions, got ${json.choices.length}`);
      const completions = json.choices.map((choice, i) => {
        if (!choice.token_ids || !choice.logprobs) {
          throw new InferenceError(
            'InvalidRequest',
            `${url} returned no token ids or logprobs for a token-id prompt; it needs vLLM's return_token_ids`,
          );
        }
        checkAligned(choice.token_ids, choice.logprobs.token_logprobs, `completion ${i}`);
        return {
          text: choice.text,
          message: { role: 'assistant', content: choice.text },
          finishReason: choice.finish_reason,
          promptTokenIds: r.promptTokenIds,
          tokenIds: choice.token_ids,
          logprobs: choice.logprobs.token_logprobs,
        };
      });
      return stampWeightsVersion(completions, headers);
    },
  };
}

/** Fills a completion's missing token fields with the local tokenizer (see {@link createOpenAIBackend}). */
export function tokenizeLocally(completion: Completion, request: GenerateRequest, tokenizer: Tokenizer): Completion {
  const { logprobs } = completion;
  if (!logprobs) throw new InferenceError('InvalidRequest', NO_LOGPROBS_MESSAGE);
  let tokenIds = completion.tokenIds;
  if (!tokenIds) {
    // Tool calls arrive parsed; their raw tokens cannot be rebuilt from the JSON faithfully.
    if (Array.isArray(completion.message.tool_calls) && completion.message.tool_calls.length > 0) {
      throw new InferenceError(
        'InvalidRequest',
        'the server returned tool calls without token ids; they cannot be tokenized locally (--openai.server_type vllm)',
      );
    }
    const eos = completion.finishReason === 'stop' && tokenizer.eos ? [tokenizer.eos.id] : [];
    tokenIds = [...tokenizer.encode(completion.text, { addSpecialTokens: false }), ...eos];
  }
  if (tokenIds.length !== logprobs.length) {
    throw new InferenceError(
      'MalformedResponse',
      `the local tokenizer ${tokenizer.name} gives ${tokenIds.length} tokens for the answer but the server sent ` +
        `${logprobs.length} logprobs; the tokenizer does not match the served model`,
    );
  }
  const promptTokenIds =
    completion.promptTokenIds ??
    tokenizer.encodeChat(request.messages, {
      addGenerationPrompt: true,
      ...(request.tools ? { tools: request.tools as Record<string, unknown>[] } : {}),
      // The server was asked to think: a thinking template renders the prompt with its switch on.
      ...(request.reasoning ? { extra: { enable_thinking: true } } : {}),
    });
  return { ...completion, promptTokenIds, tokenIds };
}
