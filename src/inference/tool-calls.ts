import { z } from 'zod';

/** One tool call the model made, its arguments parsed from JSON. */
export interface ToolCallRequest {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** A tool-call block the model wrote whose JSON did not parse, or whose shape was not `{name, arguments}`. */
export interface MalformedToolCall {
  text: string;
  error: string;
}

const ToolCallShape = z.object({ name: z.string().min(1), arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).optional() });
const OpenAIToolCall = z.looseObject({ id: z.string().optional(), function: z.looseObject({ name: z.string(), arguments: z.unknown() }) });

function parseArguments(raw: unknown): Record<string, unknown> {
  const value = typeof raw === 'string' ? (raw.trim() === '' ? {} : JSON.parse(raw)) : (raw ?? {});
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('arguments are not a JSON object');
  return value as Record<string, unknown>;
}

/** Hermes `<tool_call>{json}</tool_call>` blocks of a text (an unclosed last block counts: the model was cut off). */
function hermesBlocks(text: string, idPrefix: string): { calls: ToolCallRequest[]; malformed: MalformedToolCall[] } {
  const calls: ToolCallRequest[] = [];
  const malformed: MalformedToolCall[] = [];
  for (const match of text.matchAll(/<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g)) {
    const body = match[1]!.trim();
    try {
      const shape = ToolCallShape.safeParse(JSON.parse(body));
      if (!shape.success) throw new Error('expected {"name": string, "arguments": object}');
      calls.push({ id: `${idPrefix}-${calls.length}`, name: shape.data.name, arguments: parseArguments(shape.data.arguments) });
    } catch (error) {
      malformed.push({ text: body, error: (error as Error).message });
    }
  }
  return { calls, malformed };
}

/**
 * The tool calls of an assistant message: its OpenAI `tool_calls` when the server parsed them, else the Hermes
 * `<tool_call>{json}</tool_call>` blocks of its text (Qwen, Hermes and most open templates). Blocks that do not parse
 * are returned as malformed, never thrown; a message keeps such blocks in its text.
 */
export function parseToolCalls(
  message: { content?: unknown; tool_calls?: unknown },
  idPrefix = 'call',
): { calls: ToolCallRequest[]; malformed: MalformedToolCall[] } {
  const text = typeof message.content === 'string' ? message.content : '';
  if (!Array.isArray(message.tool_calls) || message.tool_calls.length === 0) return hermesBlocks(text, idPrefix);
  const calls: ToolCallRequest[] = [];
  const malformed = hermesBlocks(text, idPrefix).malformed;
  message.tool_calls.forEach((raw, i) => {
    const shape = OpenAIToolCall.safeParse(raw);
    if (!shape.success) return malformed.push({ text: JSON.stringify(raw), error: 'not an OpenAI tool call' });
    try {
      calls.push({
        id: shape.data.id ?? `${idPrefix}-${i}`,
        name: shape.data.function.name,
        arguments: parseArguments(shape.data.function.arguments),
      });
    } catch (error) {
      malformed.push({ text: JSON.stringify(shape.data.function.arguments), error: (error as Error).message });
    }
  });
  return { calls, malformed };
}

/**
 * An assistant message from a completion's text, its `<tool_call>` blocks parsed into OpenAI `tool_calls` (vLLM's
 * hermes parser). The text before the first block is the content; when a block is malformed the whole text stays,
 * so that the failure can still be seen and counted.
 */
export function hermesAssistantMessage(text: string, idPrefix: string): { content: string; tool_calls?: OpenAIToolCallOut[] } {
  const { calls, malformed } = hermesBlocks(text, idPrefix);
  if (calls.length === 0) return { content: text };
  return {
    content: malformed.length > 0 ? text : text.slice(0, text.indexOf('<tool_call>')),
    tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } })),
  };
}

/** One OpenAI-format tool call of an assistant message. */
export interface OpenAIToolCallOut {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}
