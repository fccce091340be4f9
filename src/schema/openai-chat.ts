import { z } from 'zod';
import { MessageSchema } from './scored-data.js';

/**
 * An OpenAI chat-completion request as Clotho's proxies take it from agent code (`clotho proxy`'s sessions, a
 * harness's session): what they read, and anything else passed over.
 */
export const ChatRequestSchema = z.looseObject({
  messages: z.array(MessageSchema),
  max_tokens: z.number().int().positive().nullish(),
  /** What newer OpenAI clients send instead of `max_tokens`. */
  max_completion_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  n: z.number().int().positive().nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  seed: z.number().int().nullish(),
  tools: z.array(z.record(z.string(), z.unknown())).nullish(),
  tool_choice: z.unknown().optional(),
  stream: z.boolean().nullish(),
});
export type ChatRequest = z.infer<typeof ChatRequestSchema>;
