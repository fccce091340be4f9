import { z } from 'zod';
import { isIntArray } from '../schema/number-rows.js';
import { REASONING_EFFORTS } from '../schema/rollout.js';
import { MessageSchema } from '../schema/scored-data.js';

const ints = z.array(z.number().int());
const floats = z.array(z.number());

/** How to sample: `n` completions of at most `maxTokens` tokens. */
const sampling = {
  n: z.number().int().positive(),
  maxTokens: z.number().int().positive(),
  temperature: z.number().min(0),
  topP: z.number().gt(0).max(1),
  stop: z.array(z.string()).optional(),
  seed: z.number().int().optional(),
};

/** What the generate step asks of an inference server: `n` samples of one conversation. */
export const GenerateRequestSchema = z.strictObject({
  messages: z.array(MessageSchema).min(1),
  ...sampling,
  /** OpenAI-format tool definitions, passed through unchanged. */
  tools: z.array(z.unknown()).optional(),
  /**
   * The caller needs the messages only (an evaluation, a `--env.messages_only` run): no token ids or logprobs are
   * asked of the server, and completions without them are returned as they came (null token fields) instead of
   * failing. Servers that answer with messages alone (OpenAI's API, most hosted ones) serve such requests.
   */
  messagesOnly: z.boolean().optional(),
  /** Reasoning asked of the model (Atropos's `extra_body.reasoning`); absent: none asked. */
  reasoning: z
    .strictObject({
      effort: z.enum(REASONING_EFFORTS).optional(),
      maxTokens: z.number().int().positive().optional(),
    })
    .optional(),
});
export type GenerateRequest = z.infer<typeof GenerateRequestSchema>;

/** Sampling `n` continuations of a prompt given as token ids (a multi-turn continuation). */
export const TokenGenerateRequestSchema = z.strictObject({
  promptTokenIds: z.array(z.number().int().nonnegative()).min(1),
  ...sampling,
});
export type TokenGenerateRequest = z.infer<typeof TokenGenerateRequestSchema>;
/** The same, its prompt's ids checked by a loop (`number-rows.ts`): a long episode's prompt is tens of thousands. */
export const HotTokenGenerateRequestSchema = TokenGenerateRequestSchema.safeExtend({
  promptTokenIds: z.custom<number[]>((v) => isIntArray(v) && v.length > 0 && v.every((id) => id >= 0)),
});

/** One OpenAI-format tool call of an assistant message. */
export const ToolCallSchema = z.looseObject({
  id: z.string(),
  type: z.string(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof ToolCallSchema>;

/**
 * One sampled answer. Token fields are null when the server does not return token ids (a plain
 * OpenAI endpoint); a later layer tokenizes locally then.
 */
export const CompletionSchema = z.object({
  text: z.string(),
  /** The assistant message as the server returned it, ready to append to the conversation. */
  message: MessageSchema,
  finishReason: z.string().nullable(),
  promptTokenIds: ints.nullable(),
  tokenIds: ints.nullable(),
  /** Log-probability of each generated token under the sampling policy, aligned with `tokenIds`. */
  logprobs: floats.nullable(),
  /**
   * Tokens the server counted for this completion (`usage.completion_tokens` of a response with one choice); absent
   * when it did not say, or said it for several choices together. A messages-only run counts its budget with it.
   */
  completionTokens: z.number().int().nonnegative().optional(),
  /**
   * The version of the weights that generated it, when the server says (`clotho inference`'s
   * `x-clotho-weights-version`); absent from other servers.
   */
  weightsVersion: z.number().int().nonnegative().optional(),
});
export type Completion = z.infer<typeof CompletionSchema>;

/** Per-call options of {@link InferenceClient.generate}. */
export interface GenerateOptions {
  /** Cancels the HTTP call; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called periodically while the call is in flight, so an activity can heartbeat. */
  onProgress?: () => void;
}

/** A chat-completion backend. */
export interface InferenceClient {
  /** Resolves with exactly `request.n` completions, or rejects with an `InferenceError`. */
  generate(request: GenerateRequest, options?: GenerateOptions): Promise<Completion[]>;
}

/** One trajectory as the trainer receives it (ATROPOS-API.md §2.4): equal-length arrays. */
export const TrainingSequenceSchema = z.object({
  tokens: ints,
  /** `MASKED` on untrained positions, the token id on generated ones. */
  masks: ints,
  /** `MASKED_LOGPROB` on untrained positions, the sampling logprob on generated ones. */
  inferenceLogprobs: floats,
});
export type TrainingSequence = z.infer<typeof TrainingSequenceSchema>;

/** The generated part of a completion, with token ids known. */
export interface GeneratedTokens {
  tokenIds: number[];
  logprobs: number[];
}

/**
 * How often a call in flight reports progress (an activity heartbeat): well inside the LLM steps' 10 s heartbeat
 * timeout, so a call on a dead worker is sent again within about 10 s and a live one is never taken for dead.
 */
export const PROGRESS_INTERVAL_MS = 2_000;
