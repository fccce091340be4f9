import { z } from 'zod';

/*
 * Request bodies of the OpenAI-compatible routes. Objects are not strict: OpenAI clients send
 * fields this server does not use (user, frequency_penalty, ...), and vLLM likewise ignores them.
 * Fields whose meaning the server cannot honour (echo: true, stream: true on vLLM's /generate) are rejected instead.
 */

const TextPartSchema = z.object({ type: z.literal('text'), text: z.string() });

/**
 * An image part: the generated models cannot see, so it becomes Qwen-VL's placeholder text, as a vision model's
 * template would mark the image's place (the prompt keeps its shape; the pixels are not used).
 */
const ImagePartSchema = z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string() }) });
const IMAGE_PLACEHOLDER = '<|vision_start|><|image_pad|><|vision_end|>';

const ToolCallSchema = z.object({
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z.object({ name: z.string(), arguments: z.union([z.string(), z.record(z.string(), z.unknown())]) }),
});

/** One chat message; content parts are joined into one string (images first, as placeholders) because chat templates expect text. */
export const ChatMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool', 'developer']),
  content: z
    .union([z.string(), z.array(z.discriminatedUnion('type', [TextPartSchema, ImagePartSchema])), z.null()])
    .optional()
    .transform((c) => {
      if (!Array.isArray(c)) return c ?? '';
      const images = c.filter((p) => p.type === 'image_url').map(() => `${IMAGE_PLACEHOLDER}\n`);
      return images.join('') + c.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
    }),
  name: z.string().optional(),
  tool_calls: z.array(ToolCallSchema).optional(),
  tool_call_id: z.string().optional(),
  reasoning_content: z.string().optional(),
});

const SamplingFields = {
  model: z.string().optional(),
  n: z.number().int().min(1).max(64).default(1),
  temperature: z.number().min(0).max(2).default(1),
  top_p: z.number().gt(0).max(1).default(1),
  seed: z.number().int().optional(),
  stop: z
    .union([z.string().min(1), z.array(z.string().min(1)).max(16)])
    .optional()
    .transform((s) => (s === undefined ? [] : typeof s === 'string' ? [s] : s)),
};

const OpenAiSamplingFields = {
  ...SamplingFields,
  /** vLLM extension: the prompt's token ids at the top level and each choice's `token_ids`. */
  return_token_ids: z.boolean().default(false),
  /** The completion as server-sent events, generated whole first (`chat-stream.ts`). */
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
};

/** `/v1/chat/completions` body. */
export const ChatCompletionRequestSchema = z
  .object({
    ...OpenAiSamplingFields,
    messages: z.array(ChatMessageSchema).min(1),
    max_tokens: z.number().int().positive().optional(),
    max_completion_tokens: z.number().int().positive().optional(),
    logprobs: z.boolean().default(false),
    top_logprobs: z.number().int().min(0).max(20).optional(),
    tools: z.array(z.object({ type: z.literal('function'), function: z.record(z.string(), z.unknown()) })).optional(),
    tool_choice: z.unknown().optional(),
    /** vLLM extensions for prompts that end mid-turn and for template switches such as enable_thinking. */
    add_generation_prompt: z.boolean().default(true),
    chat_template_kwargs: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((r) => r.top_logprobs === undefined || r.top_logprobs === 0 || r.logprobs, {
    message: 'top_logprobs requires logprobs: true',
    path: ['top_logprobs'],
  });
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

/** `/v1/completions` body: one prompt, as text or token ids. */
export const CompletionRequestSchema = z.object({
  ...OpenAiSamplingFields,
  prompt: z.union([z.string(), z.array(z.number().int().nonnegative()).min(1)]),
  /** OpenAI's legacy default. */
  max_tokens: z.number().int().positive().default(16),
  /** Legacy format: the number of alternatives per position (0 = only the sampled token's). */
  logprobs: z.number().int().min(0).max(20).optional(),
  /** vLLM extension: top-k logprobs at every prompt position, the first entry null. */
  prompt_logprobs: z.number().int().min(0).max(20).optional(),
  echo: z.literal(false, { message: 'echo is not supported' }).optional(),
});
export type CompletionRequest = z.infer<typeof CompletionRequestSchema>;

/**
 * vLLM's native `/generate` body, as Atropos's `VLLMServer` sends it: the prompt as token ids (ManagedServer's exact
 * tokens) or text, the sampling parameters at the top level (vLLM's `SamplingParams`), `logprobs: 0` for the sampled
 * tokens' logprobs and `prompt_logprobs: k` for `get_logprobs`.
 */
export const GenerateRequestSchema = z.object({
  ...SamplingFields,
  stream: z.literal(false, { message: 'streaming is not supported on /generate' }).optional(),
  prompt: z.union([z.string().min(1), z.strictObject({ prompt_token_ids: z.array(z.number().int().nonnegative()).min(1) })]),
  /** vLLM's `SamplingParams` default. */
  max_tokens: z.number().int().positive().default(16),
  /** Alternatives per position beside the sampled token; absent or null: no logprobs in the answer. */
  logprobs: z.number().int().min(0).max(20).nullish(),
  prompt_logprobs: z.number().int().min(0).max(20).nullish(),
});
export type GenerateRequest = z.infer<typeof GenerateRequestSchema>;

/** `POST /v1/weights` body: the GGUF to serve from now on (a file in the server's `--weights-dir`) and its version. */
export const WeightsRequestSchema = z.strictObject({
  path: z.string().min(1),
  version: z.number().int().nonnegative(),
});

/** OpenAI's error body. */
export interface OpenAiError {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** A 400 body naming the first offending field, every problem listed in the message. */
export function invalidRequest(error: z.ZodError): OpenAiError {
  const first = error.issues[0];
  const param = first && first.path.length > 0 ? first.path.join('.') : null;
  const message = error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
  return { error: { message, type: 'invalid_request_error', param, code: null } };
}
