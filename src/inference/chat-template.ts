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
  /**
   * What a `string` template sees for each image part: the model's image placeholder, which the vision server
   * expands into the image's tokens (vLLM writes one per image the same way).
   * @default QWEN_VL_IMAGE_PLACEHOLDER
   */
  imagePlaceholder?: string;
  /**
   * How a message whose content is a list of parts reaches the template, as vLLM's `--chat-template-content-format`:
   * `string` joins the text parts with newlines and puts one placeholder per image before them; `openai` passes the
   * parts, each image as `{ type: 'image' }`, to a template that loops over them and writes its own placeholder.
   * @default detected from the template (`openai` when it loops over a message's content)
   */
  contentFormat?: ContentFormat;
}

/** How content parts reach a chat template (vLLM's names). */
export type ContentFormat = 'string' | 'openai';

/** The image placeholder of Qwen2-VL, Qwen2.5-VL and Qwen3-VL, whose tokens every Qwen2/3 tokenizer has. */
export const QWEN_VL_IMAGE_PLACEHOLDER = '<|vision_start|><|image_pad|><|vision_end|>';

const REASONING_FIELDS = ['reasoning_content', 'thinking', 'reasoning'] as const;

/**
 * Renders messages through a Hugging Face chat template the way transformers'
 * `apply_chat_template(tokenize=False)` does: the special-token strings (`bos_token`, `eos_token`, ...)
 * and `extra` are template variables, keys whose value is null are dropped, and reasoning is readable
 * under all three of its names. Content given as a list of parts (OpenAI's text and `image_url` parts) reaches
 * the template as vLLM's multimodal chat hands it over (see `contentFormat`): each image becomes the model's
 * placeholder, never its bytes; any other kind of part is an error.
 */
export function renderChatTemplate(
  template: string,
  messages: readonly ChatMessage[],
  options: ChatTemplateOptions = {},
  specialTokens: Record<string, unknown> = {},
): string {
  const checked = z.array(ChatMessageSchema).parse(messages);
  const tools = options.tools === undefined ? undefined : z.array(ToolDefinitionSchema).parse(options.tools);
  const parts: PartsRendering = {
    format: options.contentFormat ?? detectContentFormat(template),
    placeholder: options.imagePlaceholder ?? QWEN_VL_IMAGE_PLACEHOLDER,
  };
  const prepared = checked.map((m) => prepareMessage(m, options.parseToolArguments ?? true, parts));
  return compile(template).render({
    ...specialTokens,
    ...options.extra,
    messages: prepared,
    tools,
    add_generation_prompt: options.addGenerationPrompt ?? false,
  });
}

function prepareMessage(message: ChatMessage, parseArguments: boolean, parts: PartsRendering): Record<string, unknown> {
  // transformers drops null-valued keys; `content` becomes '' instead because OpenAI writes null for
  // "no text" beside tool calls, and templates such as Qwen3's read `content` unconditionally.
  const out: Record<string, unknown> = { content: '' };
  for (const [key, value] of Object.entries(message)) if (value !== null && value !== undefined) out[key] = value;
  if (Array.isArray(message.content)) out.content = renderParts(message.content, parts);
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

interface PartsRendering {
  format: ContentFormat;
  placeholder: string;
}

/**
 * A template loops over content parts when it has `{% for x in <message>.content %}` (or `['content']`): vLLM's
 * detection, on the template's text rather than its syntax tree.
 */
export function detectContentFormat(template: string): ContentFormat {
  return /\{%-?\s*for\s+\w+\s+in\s+\w+\s*(?:\.\s*content|\[\s*(['"])content\1\s*\])\s*(?:\|[^%]*)?-?%\}/.test(template)
    ? 'openai'
    : 'string';
}

/** Content parts as vLLM hands them to a template: text with placeholders, or parts with images as `{ type: 'image' }`. */
function renderParts(content: readonly unknown[], { format, placeholder }: PartsRendering): string | Record<string, unknown>[] {
  const kinds = content.map(partKind);
  if (format === 'openai') return content.map((part, i) => (kinds[i] === 'image' ? { type: 'image' } : (part as Record<string, unknown>)));
  const text = content.flatMap((part, i) => (kinds[i] === 'text' ? [(part as { text: string }).text] : [])).join('\n');
  // Placeholders the text already holds stand for their images; the others go first, one line each.
  const missing = Math.max(0, kinds.filter((k) => k === 'image').length - text.split(placeholder).length + 1);
  return [...Array.from({ length: missing }, () => placeholder), ...(text === '' ? [] : [text])].join('\n');
}

function partKind(part: unknown): 'text' | 'image' {
  const type = typeof part === 'object' && part !== null ? (part as { type?: unknown }).type : undefined;
  if (type === 'text' && typeof (part as { text?: unknown }).text === 'string') return 'text';
  if (type === 'image_url' || type === 'image') return 'image';
  throw new Error(`chat content part ${JSON.stringify(type ?? part)} is not supported: only text and image parts can be rendered`);
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
