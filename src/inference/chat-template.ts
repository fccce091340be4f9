import { Template } from '@huggingface/jinja';
import { z } from 'zod';

/** A tool call as the OpenAI API writes it; `arguments` is usually a JSON string. */
export const ChatToolCallSchema = z.looseObject({
  id: z.string().optional(),
  type: z.string().optional(),
  function: z.looseObject({
    name: z.string(),
    arguments: z.union([z.string(), z.record(z.string(), z.unknown())]),
  }),
});
export type ChatToolCall = z.infer<typeof ChatToolCallSchema>;

/**
 * A chat message as templates see it. Extra keys (`tool_call_id`, `name`, `reasoning_content`, ...)
 * reach the template unchanged.
 */
export const ChatMessageSchema = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(z.unknown()), z.null()]).optional(),
  tool_calls: z.array(ChatToolCallSchema).nullable().optional(),
});
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/** A tool definition (`{ type: 'function', function: { name, description, parameters } }` or a bare schema). */
export const ToolDefinitionSchema = z.record(z.string(), z.unknown());
export type ToolDefinition = z.infer<typeof ToolDefinitionSchema>;

/** How `renderChatTemplate` renders a conversation. */
export interface ChatTemplateOptions {
  /** End with the header of a new assistant turn. @default false */
  addGenerationPrompt?: boolean;
  /** Tool definitions the template lists in its system block (checked to be objects). */
  tools?: readonly unknown[];
  /**
   * Parse tool-call `arguments` given as a JSON object string into an object before rendering, as vLLM
   * does before calling the template, so templates that write `arguments | tojson` do not quote them
   * twice. Set false to pass them exactly as given, as transformers does.
   * @default true
   */
  parseToolArguments?: boolean;
  /** More template variables (`enable_thinking`, `documents`, ...); they override the special tokens. */
  extra?: Record<string, unknown>;
}

const REASONING_FIELDS = ['reasoning_content', 'thinking', 'reasoning'] as const;

/**
 * Renders messages through a Hugging Face chat template the way transformers'
 * `apply_chat_template(tokenize=False)` does: the special-token strings (`bos_token`, `eos_token`, ...)
 * and `extra` are template variables, keys whose value is null are dropped, and reasoning is readable
 * under all three of its names.
 */
export function renderChatTemplate(
  template: string,
  messages: readonly ChatMessage[],
  options: ChatTemplateOptions = {},
  specialTokens: Record<string, unknown> = {},
): string {
  const checked = z.array(ChatMessageSchema).parse(messages);
  const tools = options.tools === undefined ? undefined : z.array(ToolDefinitionSchema).parse(options.tools);
  const prepared = checked.map((m) => prepareMessage(m, options.parseToolArguments ?? true));
  return compile(template).render({
    ...specialTokens,
    ...options.extra,
    messages: prepared,
    tools,
    add_generation_prompt: options.addGenerationPrompt ?? false,
  });
}

function prepareMessage(message: ChatMessage, parseArguments: boolean): Record<string, unknown> {
  // transformers drops null-valued keys; `content` becomes '' instead because OpenAI writes null for
  // "no text" beside tool calls, and templates such as Qwen3's read `content` unconditionally.
  const out: Record<string, unknown> = { content: '' };
  for (const [key, value] of Object.entries(message)) if (value !== null && value !== undefined) out[key] = value;
  const reasoning = REASONING_FIELDS.map((k) => message[k]).find((v) => v !== null && v !== undefined);
  if (reasoning !== undefined) for (const key of REASONING_FIELDS) out[key] = reasoning;
  if (message.tool_calls && parseArguments) {
    out.tool_calls = message.tool_calls.map((call) => ({
      ...call,
      function: { ...call.function, arguments: parseArgumentsString(call.function.arguments) },
    }));
  }
  return out;
}

function parseArgumentsString(args: string | Record<string, unknown>): unknown {
  if (typeof args !== 'string') return args;
  try {
    const parsed: unknown = JSON.parse(args);
    // Only objects: a model that wrote `"5"` as its arguments should see it rendered back unchanged.
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : args;
  } catch {
    return args;
  }
}

/** Parsing a template costs more than rendering it, and a process uses few templates. */
const compiled = new Map<string, Template>();

function compile(template: string): Template {
  let parsed = compiled.get(template);
  if (parsed === undefined) {
    parsed = new Template(template);
    compiled.set(template, parsed);
  }
  return parsed;
}
