import type { Context } from 'hono';
import type { z } from 'zod';
import { isMessagesOnly, MESSAGES_ONLY_NOT_TRAINING } from '../schema/scored-data.js';
import { GzipBodyError, gunzipLimited, isGzipEncoded } from './gzip.js';

/** One entry of a FastAPI validation error: `{"detail": [{"loc": [...], "msg": ..., "type": ...}]}`. */
export interface ErrorDetail {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** 422 in FastAPI's shape, which Atropos clients log on a 4xx before giving up on the request. */
export const unprocessable = (c: Context, detail: ErrorDetail[]) => c.json({ detail }, 422);

/**
 * The groups of a posted body (one group, or a list) that are messages-only records (`clotho process
 * --env.messages_only`), each named with why it is refused; empty when there are none.
 */
export function messagesOnlyDetail(body: unknown): ErrorDetail[] {
  const at = (i: number | null): (string | number)[] => (i === null ? ['body', 'messages_only'] : ['body', i, 'messages_only']);
  const groups: [number | null, unknown][] = Array.isArray(body) ? body.map((g, i) => [i, g]) : [[null, body]];
  return groups
    .filter(([, g]) => isMessagesOnly(g))
    .map(([i]) => ({
      loc: at(i),
      msg: `${MESSAGES_ONLY_NOT_TRAINING}; post groups with tokens and masks (clotho process without --env.messages_only)`,
      type: 'value_error',
    }));
}

class BodyTooLarge extends Error {}

async function collect(chunks: AsyncIterable<Uint8Array | string>, maxBytes: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += bytes.byteLength;
    if (size > maxBytes) throw new BodyTooLarge();
    parts.push(bytes);
  }
  return Buffer.concat(parts);
}

async function* streamChunks(stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) yield r.value;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** Node's request under @hono/node-server (absent under `app.request` in tests). */
type NodeIncoming = AsyncIterable<Uint8Array | string> & {
  readableEnded?: boolean;
  readableDidRead?: boolean;
  listenerCount?(event: string): number;
};

/**
 * The raw request body. Read from the Node request that @hono/node-server passes when nothing has read it yet: the
 * Fetch `Request`'s body stream around it copies every chunk once more, and a GET body (Atropos's env client sends
 * `GET /status-env` with JSON) never reaches it at all.
 */
function rawChunks(c: Context): AsyncIterable<Uint8Array | string> | null {
  const method = c.req.method;
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming as NodeIncoming | undefined;
  const readable = incoming !== undefined && typeof incoming[Symbol.asyncIterator] === 'function' && !incoming.readableEnded;
  // A listener means the Fetch body stream already draws from it: then that stream is the body.
  const untouched =
    readable &&
    !incoming.readableDidRead &&
    (incoming.listenerCount?.('data') ?? 0) === 0 &&
    (incoming.listenerCount?.('readable') ?? 0) === 0;
  if (method === 'GET' || method === 'HEAD') return readable ? incoming : null;
  if (untouched) return incoming;
  return c.req.raw.body ? streamChunks(c.req.raw.body) : null;
}

/**
 * Reads the body as JSON: undefined when there is none; `text` and `bytes` are the body itself. Gzip bodies are
 * inflated; `maxBytes` bounds both the bytes received and the bytes inflated. On failure returns the error response:
 * 413, 400 `Invalid gzip payload`, or 422 for malformed JSON as FastAPI answers.
 */
export async function readJson(c: Context, maxBytes: number): Promise<{ value: unknown; text: string; bytes: Uint8Array } | Response> {
  const tooLarge = () => c.json({ detail: `Request body larger than ${maxBytes} bytes` }, 413);
  if (Number(c.req.header('Content-Length') ?? 0) > maxBytes) return tooLarge();
  const chunks = rawChunks(c);
  let bytes: Uint8Array;
  try {
    bytes = chunks ? await collect(chunks, maxBytes) : new Uint8Array();
    if (bytes.byteLength > 0 && isGzipEncoded(c.req.header('Content-Encoding'))) bytes = await gunzipLimited(bytes, maxBytes);
  } catch (error) {
    if (error instanceof BodyTooLarge) return tooLarge();
    if (error instanceof GzipBodyError) return error.reason === 'too_large' ? tooLarge() : c.text('Invalid gzip payload', 400);
    throw error;
  }
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  if (text.trim() === '') return { value: undefined, text, bytes };
  try {
    return { value: JSON.parse(text), text, bytes };
  } catch (error) {
    return unprocessable(c, [{ loc: ['body'], msg: `JSON decode error: ${(error as Error).message}`, type: 'json_invalid' }]);
  }
}

/** A required value that was absent; zod reports it as a type error on `undefined`. */
function isMissing(issue: z.core.$ZodIssue): boolean {
  if (issue.code === 'invalid_type') return issue.input === undefined && / received undefined$/.test(issue.message);
  // A union such as Message.content reports each failed branch instead of the absence.
  if (issue.code === 'invalid_union') return issue.errors.length > 0 && issue.errors.every((branch) => branch.every(isMissing));
  return false;
}

/** Translates zod issues into FastAPI error entries, each `loc` prefixed (`["body"]`, `["query"]`). */
export function toDetail(issues: readonly z.core.$ZodIssue[], prefix: (string | number)[]): ErrorDetail[] {
  return issues.map((issue) => {
    const loc = [...prefix, ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))];
    if (isMissing(issue)) return { loc, msg: 'Field required', type: 'missing' };
    const type = issue.code === 'invalid_type' ? `${issue.expected}_type` : issue.code === 'custom' ? 'value_error' : issue.code;
    return { loc, msg: issue.message, type };
  });
}

/** Validates `value` against `schema`; on failure returns the 422 response naming each bad field. */
export function validate<S extends z.ZodType>(
  c: Context,
  schema: S,
  value: unknown,
  prefix: (string | number)[] = ['body'],
): { data: z.output<S> } | Response {
  const result = schema.safeParse(value, { reportInput: true });
  return result.success ? { data: result.data } : unprocessable(c, toDetail(result.error.issues, prefix));
}
