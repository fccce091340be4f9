/**
 * OpenAI's server-sent events for a completion generated whole: what `clotho inference`, `clotho proxy` and a harness
 * or verifiers session answer a request that asks for `stream: true` (the AI SDK, opencode and verifiers' chat
 * program always ask so). RL wants whole completions with their token ids, so the completion is generated first and
 * then sent as chunks: each choice whole in one delta, then its finish reason, then the usage when the request asked
 * for it (`stream_options.include_usage`), then `[DONE]`. A replayed answer streams the same way.
 */

/** The fields of a chat completion the chunks carry; anything else of a choice (logprobs, token ids) rides the first. */
interface ChatCompletionLike {
  choices: { index: number; message: object; finish_reason: string | null; [field: string]: unknown }[];
  usage?: unknown;
  [field: string]: unknown;
}

interface CompletionLike {
  choices: { index: number; text: string; finish_reason: string | null; [field: string]: unknown }[];
  usage?: unknown;
  [field: string]: unknown;
}

/** Whether a request body asked for the usage chunk (`stream_options: { include_usage: true }`). */
export function includesUsage(body: object): boolean {
  const options = (body as { stream_options?: { include_usage?: unknown } | null }).stream_options;
  return options?.include_usage === true;
}

const event = (value: object) => `data: ${JSON.stringify(value)}`;

/** A chat completion's chunks (`chat.completion.chunk`), each a `data: …` line, ending with `data: [DONE]`. */
export function chatCompletionEvents(response: ChatCompletionLike, includeUsage: boolean): string[] {
  const { choices, usage, object: _, ...head } = response;
  const chunk = (rest: object) => event({ ...head, object: 'chat.completion.chunk', ...rest });
  // In a chunk, each tool call carries its index in the message's list.
  const delta = (message: { tool_calls?: object[] }) =>
    message.tool_calls ? { ...message, tool_calls: message.tool_calls.map((call, index) => ({ index, ...call })) } : message;
  return [
    chunk({ choices: choices.map(({ message, finish_reason: __, ...rest }) => ({ ...rest, delta: delta(message), finish_reason: null })) }),
    chunk({ choices: choices.map((c) => ({ index: c.index, delta: {}, finish_reason: c.finish_reason })) }),
    ...(includeUsage && usage !== undefined ? [chunk({ choices: [], usage })] : []),
    'data: [DONE]',
  ];
}

/** A legacy completion's chunks (`text_completion`): each choice's text whole with its finish reason, then the usage. */
export function completionEvents(response: CompletionLike, includeUsage: boolean): string[] {
  const { choices, usage, ...head } = response;
  return [
    event({ ...head, choices }),
    ...(includeUsage && usage !== undefined ? [event({ ...head, choices: [], usage })] : []),
    'data: [DONE]',
  ];
}

/** The events as an HTTP body: each followed by a blank line. */
export function eventStreamBody(events: readonly string[]): string {
  return events.map((e) => `${e}\n\n`).join('');
}

/** Headers of an event-stream answer. */
export const EVENT_STREAM_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } as const;
