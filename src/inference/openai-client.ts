import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { z } from 'zod';
import type { ServerConfig } from '../config/schemas.js';
import { intArray, isLogprobEntries, parseHotFirst } from '../schema/number-rows.js';
import { MASKED, MASKED_LOGPROB } from '../schema/scored-data.js';
import { callSignal } from './call-signal.js';
import { classifyError, InferenceError } from './errors.js';
import {
  PROGRESS_INTERVAL_MS,
  ToolCallSchema,
  type Completion,
  type GeneratedTokens,
  type GenerateOptions,
  type GenerateRequest,
  type InferenceClient,
  type TrainingSequence,
} from './types.js';
import { stampWeightsVersion } from './weights-version.js';

const ints = z.array(z.number().int());
const logprobEntries = z.array(z.looseObject({ logprob: z.number() }));

/** The parts of a (vLLM-extended) chat-completion response this client relies on, its per-token arrays as given. */
const chatResponse = (tokenIds: z.ZodType<number[]>, entries: z.ZodType<z.output<typeof logprobEntries>>) =>
  z.looseObject({
    choices: z.array(
      z.looseObject({
        index: z.number().int(),
        message: z.looseObject({
          role: z.string(),
          content: z.string().nullish(),
          tool_calls: z.array(ToolCallSchema).nullish(),
        }),
        finish_reason: z.string().nullish(),
        logprobs: z.looseObject({ content: entries.nullish() }).nullish(),
        /** vLLM with `return_token_ids`: the generated token ids. */
        token_ids: tokenIds.nullish(),
      }),
    ),
    /** vLLM with `return_token_ids`: the rendered prompt's token ids. */
    prompt_token_ids: tokenIds.nullish(),
    /** What the server counted, over all choices together. */
    usage: z.looseObject({ completion_tokens: z.number().int().nonnegative().nullish() }).nullish(),
  });
const ChatResponseSchema = chatResponse(ints, logprobEntries);
/** The same, its token ids and logprob entries checked by loops (`number-rows.ts`), which a long completion needs. */
const HotChatResponseSchema = chatResponse(intArray, z.custom<z.output<typeof logprobEntries>>(isLogprobEntries));
type ChatChoice = z.infer<typeof ChatResponseSchema>['choices'][number];

/** Options of {@link createOpenAIClient}. */
export interface OpenAIClientOptions {
  /** How often `onProgress` fires while a call is in flight. @default 5000 */
  progressIntervalMs?: number;
}

/**
 * An {@link InferenceClient} for any OpenAI-compatible chat endpoint. It asks for logprobs and
 * vLLM's token ids; servers that ignore `return_token_ids` yield completions with null token fields. Completions
 * carry the weights version the server reports (`clotho inference`), if any.
 * It never retries: Temporal's retry policy on the generate activity does. Nor does it check its request: the server
 * manager did, where the request entered.
 */
export function createOpenAIClient(config: ServerConfig, options: OpenAIClientOptions = {}): InferenceClient {
  const timeoutMs = Math.ceil(config.timeout * 1000);
  const client = new OpenAI({ baseURL: config.base_url, apiKey: config.api_key || 'EMPTY', maxRetries: 0, timeout: timeoutMs });
  const progressIntervalMs = options.progressIntervalMs ?? PROGRESS_INTERVAL_MS;

  return {
    async generate(request: GenerateRequest, { signal, onProgress }: GenerateOptions = {}): Promise<Completion[]> {
      // One deadline for headers and body alike; the SDK's own timeout stops at the headers.
      const call = callSignal([signal], timeoutMs);
      const timer = onProgress ? setInterval(onProgress, progressIntervalMs) : undefined;
      try {
        const response = await client.chat.completions.create(requestBody(config, request), { signal: call.signal }).asResponse();
        return stampWeightsVersion(parseCompletions(await response.text(), request.n), response.headers);
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        if (call.timedOut) throw new InferenceError('Timeout', `no answer within ${config.timeout} s`, { cause: err });
        throw classifyError(err);
      } finally {
        call.release();
        clearInterval(timer);
      }
    },
  };
}

/** The chat-completion body of a request to a server: sampling, vLLM's token ids, and Atropos's reasoning fields. */
export function requestBody(config: ServerConfig, request: GenerateRequest): ChatCompletionCreateParamsNonStreaming {
  const body: ChatCompletionCreateParamsNonStreaming & { return_token_ids?: boolean } = {
    model: config.model_name,
    messages: request.messages as ChatCompletionMessageParam[],
    n: request.n,
    max_tokens: request.maxTokens,
    temperature: request.temperature,
    top_p: request.topP,
    ...(request.stop ? { stop: request.stop } : {}),
    ...(request.seed !== undefined ? { seed: request.seed } : {}),
    ...(request.tools ? { tools: request.tools as ChatCompletionCreateParamsNonStreaming['tools'] } : {}),
    // Token ids and logprobs only when the caller needs them: hosted APIs refuse vLLM's return_token_ids, and
    // OpenAI's reasoning models refuse logprobs.
    ...(request.messagesOnly ? {} : { logprobs: true, top_logprobs: 0, return_token_ids: true }),
    ...(request.reasoning ? reasoningFields(config.base_url, request.reasoning) : {}),
  };
  if (request.reasoning && isOpenAIOfficial(config.base_url)) {
    // OpenAI's reasoning models take only temperature 1 and count their budget in max_completion_tokens (as Atropos sends).
    body.temperature = 1;
    body.max_completion_tokens = body.max_tokens ?? null;
    delete body.max_tokens;
  }
  return body;
}

const isOpenAIOfficial = (baseUrl: string) => baseUrl.includes('api.openai.com');

/**
 * The request fields that ask for reasoning, as Atropos's ReasoningConfig builds them: api.openai.com takes a top-level
 * `reasoning_effort` (medium unless given); other OpenAI-compatible servers (OpenRouter, vLLM, Nous Portal) take
 * `reasoning: { enabled, effort | max_tokens }`, effort first, since OpenRouter refuses both at once.
 */
export function reasoningFields(baseUrl: string, reasoning: NonNullable<GenerateRequest['reasoning']>): Record<string, unknown> {
  if (isOpenAIOfficial(baseUrl)) return { reasoning_effort: reasoning.effort ?? 'medium' };
  const limit =
    reasoning.effort !== undefined
      ? { effort: reasoning.effort }
      : reasoning.maxTokens !== undefined
        ? { max_tokens: reasoning.maxTokens }
        : {};
  return { reasoning: { enabled: true, ...limit } };
}

/** Parses and checks a response body; throws `MalformedResponse` or `WrongChoiceCount`. */
export function parseCompletions(text: string, n: number): Completion[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new InferenceError('MalformedResponse', `response is not JSON: ${text.slice(0, 200)}`, { cause: err });
  }
  const parsed = parseHotFirst(HotChatResponseSchema, ChatResponseSchema, json);
  if (!parsed.success) throw new InferenceError('MalformedResponse', `malformed response: ${z.prettifyError(parsed.error)}`);
  const { choices, prompt_token_ids, usage } = parsed.data;
  if (choices.length !== n) {
    throw new InferenceError('WrongChoiceCount', `asked for ${n} choices, the server returned ${choices.length}`);
  }
  const completions = [...choices].sort((a, b) => a.index - b.index).map((choice) => toCompletion(choice, prompt_token_ids ?? null));
  // Usage counts all choices together: it is one completion's count only when there is one.
  const counted = usage?.completion_tokens;
  return completions.length === 1 && typeof counted === 'number' ? [{ ...completions[0]!, completionTokens: counted }] : completions;
}

function toCompletion(choice: ChatChoice, promptTokenIds: number[] | null): Completion {
  const { role, content, tool_calls } = choice.message;
  const tokenIds = choice.token_ids ?? null;
  const logprobs = choice.logprobs?.content?.map((entry) => entry.logprob) ?? null;
  if (tokenIds && logprobs && tokenIds.length !== logprobs.length) {
    throw new InferenceError('MalformedResponse', `choice ${choice.index}: ${tokenIds.length} token ids but ${logprobs.length} logprobs`);
  }
  return {
    text: content ?? '',
    message: { role, content: content ?? null, ...(tool_calls?.length ? { tool_calls } : {}) },
    finishReason: choice.finish_reason ?? null,
    promptTokenIds,
    tokenIds,
    logprobs,
  };
}

/**
 * A single-turn trajectory in the trainer's layout (ATROPOS-API.md §2.4): prompt positions masked,
 * generated positions carry their token id and sampling logprob.
 */
export function buildTrainingSequence(promptTokenIds: number[], completion: GeneratedTokens): TrainingSequence {
  const sequence: TrainingSequence = { tokens: [], masks: [], inferenceLogprobs: [] };
  continueTrainingSequence(sequence, promptTokenIds, completion);
  return sequence;
}

/**
 * Continues a multi-turn trajectory: `newPromptTokenIds` (the whole conversation rendered again)
 * must begin with `previous.tokens`, whose masks and logprobs are kept; the rest of the prompt
 * (tool or user turn, generation prompt) is masked; the new completion is trained on.
 */
export function extendTrainingSequence(
  previous: TrainingSequence,
  newPromptTokenIds: number[],
  completion: GeneratedTokens,
): TrainingSequence {
  const sequence = {
    tokens: previous.tokens.slice(),
    masks: previous.masks.slice(),
    inferenceLogprobs: previous.inferenceLogprobs.slice(),
  };
  continueTrainingSequence(sequence, newPromptTokenIds, completion);
  return sequence;
}

/**
 * What {@link extendTrainingSequence} does, in place: appends to the arrays of `sequence` (its holder's own) rather
 * than copying them every turn, which made an episode's turns cost O(tokens²) (issue 25).
 */
export function continueTrainingSequence(
  sequence: TrainingSequence,
  newPromptTokenIds: number[],
  { tokenIds, logprobs }: GeneratedTokens,
): void {
  const { tokens, masks, inferenceLogprobs } = sequence;
  const length = tokens.length;
  if (tokenIds.length !== logprobs.length) {
    throw new Error(`completion has ${tokenIds.length} token ids but ${logprobs.length} logprobs`);
  }
  const at = tokens.findIndex((token, i) => newPromptTokenIds[i] !== token);
  // A shorter prompt differs too: its missing positions read as undefined.
  if (at !== -1) {
    throw new TokenizationDriftError(
      `re-tokenization drift: the new prompt (${newPromptTokenIds.length} tokens) does not start with the ` +
        `previous sequence (${length} tokens); first difference at position ${at}: ` +
        `expected ${tokens[at]}, got ${newPromptTokenIds[at]}`,
    );
  }
  for (let i = length; i < newPromptTokenIds.length; i++) {
    tokens.push(newPromptTokenIds[i]!);
    masks.push(MASKED);
    inferenceLogprobs.push(MASKED_LOGPROB);
  }
  for (let i = 0; i < tokenIds.length; i++) {
    tokens.push(tokenIds[i]!);
    masks.push(tokenIds[i]!);
    inferenceLogprobs.push(logprobs[i]!);
  }
}

/** Thrown when a later turn's prompt does not begin with the trajectory so far. */
export class TokenizationDriftError extends Error {
  override readonly name = 'TokenizationDriftError';
}
