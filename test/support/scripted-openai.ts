import { createServer, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { chatCompletionEvents, EVENT_STREAM_HEADERS, eventStreamBody, includesUsage } from '../../src/inference/chat-stream.js';

/**
 * A scripted stand-in for an LLM server: real HTTP, OpenAI chat and text completions in vLLM's
 * extended format (`prompt_token_ids`, `token_ids`, `logprobs.content`; a chat answer streamed as OpenAI's chunks when
 * asked), answers chosen by a
 * responder function. Its tokenizer is a toy chat template over Unicode code points, built so that
 * a longer conversation's prompt ids start with a shorter one's prompt ids plus its completion ids,
 * as real chat templates do for multi-turn rollouts.
 */

/** Special token ids; text tokens are Unicode code points. IMAGE stands for one image part, as a vision server's placeholder. */
export const TOKEN = { START: 1, SEP: 2, END: 3, IMAGE: 4 } as const;
const SPECIAL_TEXT: Record<number, string> = {
  [TOKEN.START]: '<|start|>',
  [TOKEN.SEP]: '<|sep|>',
  [TOKEN.END]: '<|end|>',
  [TOKEN.IMAGE]: '<|image|>',
};

/** Code points of `text`. */
export function encodeText(text: string): number[] {
  return Array.from(text, (c) => c.codePointAt(0) as number);
}

/** Whether content is a list of OpenAI text and image parts. */
function isPartList(content: unknown): content is ({ type: 'text'; text: string } | { type: 'image_url' })[] {
  return (
    Array.isArray(content) &&
    content.length > 0 &&
    content.every((p: { type?: unknown; text?: unknown }) => (p?.type === 'text' && typeof p.text === 'string') || p?.type === 'image_url')
  );
}

function encodeContent(content: unknown): number[] {
  if (content === null || content === undefined) return [];
  // Like a vision server, each image part is one placeholder token rather than its bytes.
  if (isPartList(content)) return content.flatMap((p) => (p.type === 'text' ? encodeText(p.text) : [TOKEN.IMAGE]));
  return encodeText(typeof content === 'string' ? content : JSON.stringify(content));
}

function encodeToolCalls(toolCalls: unknown[] | null | undefined): number[] {
  return toolCalls?.length ? encodeText(JSON.stringify(toolCalls)) : [];
}

/** `<|start|>role<|sep|>`: opens a turn; the generation prompt is the assistant's header. */
export function encodeHeader(role: string): number[] {
  return [TOKEN.START, ...encodeText(role), TOKEN.SEP];
}

/** What the model generates for a turn: its text, its tool calls as JSON, then `<|end|>`. */
export function encodeCompletion(text: string, toolCalls?: unknown[] | null): number[] {
  return [...encodeContent(text), ...encodeToolCalls(toolCalls), TOKEN.END];
}

/** A whole conversation, with the assistant's header appended when `addGenerationPrompt`. */
export function encodeChat(messages: ChatMessage[], addGenerationPrompt = true): number[] {
  const ids = messages.flatMap((m) => [...encodeHeader(m.role), ...encodeContent(m.content), ...encodeToolCalls(m.tool_calls), TOKEN.END]);
  return addGenerationPrompt ? [...ids, ...encodeHeader('assistant')] : ids;
}

/** Deterministic logprob of a token: exact in binary, so it survives JSON unchanged. */
export function defaultLogprob(tokenId: number): number {
  return -((tokenId % 13) + 1) / 16;
}

function tokenText(id: number): string {
  return SPECIAL_TEXT[id] ?? String.fromCodePoint(id);
}

const ChatMessageSchema = z.looseObject({
  role: z.string(),
  content: z.unknown().optional(),
  tool_calls: z.array(z.unknown()).nullish(),
});
type ChatMessage = z.infer<typeof ChatMessageSchema>;

const common = {
  model: z.string().optional(),
  n: z.number().int().positive().optional(),
  return_token_ids: z.boolean().nullish(),
};
const ChatBodySchema = z.looseObject({ ...common, messages: z.array(ChatMessageSchema).min(1), logprobs: z.boolean().nullish() });
const TextBodySchema = z.looseObject({
  ...common,
  prompt: z.union([z.string(), z.array(z.number().int())]),
  logprobs: z.number().int().nullish(),
});

/** A parsed request body as the responder sees it. */
export type ScriptedBody = z.infer<typeof ChatBodySchema> | z.infer<typeof TextBodySchema>;

/** Assistant turns already in a chat request's conversation: which turn of an episode the model is asked for. */
export function assistantTurns(body: ScriptedBody): number {
  const messages = (body as { messages?: ChatMessage[] }).messages;
  return Array.isArray(messages) ? messages.filter((m) => m.role === 'assistant').length : 0;
}

/** One scripted answer; token ids and logprobs are derived from the text unless given. */
export interface ScriptedChoice {
  text: string;
  tokenIds?: number[];
  logprobs?: number[];
  toolCalls?: unknown[];
  /** @default 'tool_calls' when there are tool calls, else 'stop' */
  finishReason?: string;
}

/** What one call does: answer (possibly late), fail with a status, never answer, or drop the socket. */
export type ScriptedOutcome =
  | { choices: ScriptedChoice[]; delayMs?: number }
  | { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number }
  | { hang: true }
  | { destroySocket: true };

/** Chooses the outcome of the `callIndex`-th completion call (0-based, chat and text alike). */
export type Responder = (body: ScriptedBody, callIndex: number) => ScriptedOutcome | Promise<ScriptedOutcome>;

/** `n` choices with texts `choice 0`, `choice 1`, …. */
export const defaultResponder: Responder = (body) => ({
  choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: `choice ${i}` })),
});

/** Options of {@link startScriptedOpenAI}. */
export interface ScriptedOpenAIOptions {
  /** @default defaultResponder */
  responder?: Responder;
  /** Whether `return_token_ids` is honoured; false imitates a plain OpenAI server. @default true */
  tokenIds?: boolean;
  /**
   * Whether `logprobs` is honoured; false (with `tokenIds: false`) imitates a server that answers with messages only,
   * as most hosted APIs do. @default true
   */
  logprobs?: boolean;
  /** @default 'scripted-model' */
  model?: string;
  /** The port to listen on, to start a server again where a closed one was (an outage and its end). @default a free one */
  port?: number;
}

/** A request the server received. */
export interface RecordedRequest {
  method: string;
  path: string;
  /** The parsed JSON body, the raw text if it was not JSON, or null for no body. */
  body: unknown;
  /** `Date.now()` on arrival. */
  at: number;
}

/** A running scripted server. */
export interface ScriptedOpenAI {
  /** `http://127.0.0.1:<port>/v1`, the OpenAI base URL. */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Completion calls so far (the next responder call index). */
  readonly calls: number;
  close(): Promise<void>;
}

/** Starts a scripted server on a free port of 127.0.0.1. */
export async function startScriptedOpenAI(options: ScriptedOpenAIOptions = {}): Promise<ScriptedOpenAI> {
  const responder = options.responder ?? defaultResponder;
  const model = options.model ?? 'scripted-model';
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let calls = 0;

  const delay = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  async function complete(req: IncomingMessage, res: ServerResponse, path: string, json: unknown): Promise<void> {
    const parsed =
      path === '/v1/chat/completions'
        ? { chat: true as const, result: ChatBodySchema.safeParse(json) }
        : { chat: false as const, result: TextBodySchema.safeParse(json) };
    if (!parsed.result.success) return send(res, 400, openAIError(z.prettifyError(parsed.result.error), 400));
    const outcome = await responder(parsed.result.data, calls++);
    if ('hang' in outcome) return;
    if ('destroySocket' in outcome) {
      req.socket.destroy();
      return;
    }
    if (outcome.delayMs) await delay(outcome.delayMs);
    if ('status' in outcome) {
      return send(
        res,
        outcome.status,
        outcome.body ?? openAIError(STATUS_CODES[outcome.status] ?? 'error', outcome.status),
        outcome.headers,
      );
    }
    const withIds = options.tokenIds !== false && parsed.result.data.return_token_ids === true;
    const body = options.logprobs === false ? { ...parsed.result.data, logprobs: null } : parsed.result.data;
    if (parsed.chat && body.stream === true) {
      // Agents that always stream (verifiers' chat program) get the completion as OpenAI's chunks.
      const events = chatCompletionEvents(
        chatResponse(model, body as z.infer<typeof ChatBodySchema>, outcome.choices, withIds),
        includesUsage(body),
      );
      res.writeHead(200, EVENT_STREAM_HEADERS);
      res.end(eventStreamBody(events));
      return;
    }
    send(
      res,
      200,
      parsed.chat
        ? chatResponse(model, body as z.infer<typeof ChatBodySchema>, outcome.choices, withIds)
        : textResponse(model, body as z.infer<typeof TextBodySchema>, outcome.choices, withIds),
    );
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    let json: unknown = null;
    try {
      json = raw === '' ? null : JSON.parse(raw);
    } catch {
      json = raw;
    }
    requests.push({ method: req.method ?? 'GET', path, body: json, at: Date.now() });
    if (req.method === 'GET' && path === '/health') return send(res, 200, {});
    if (req.method === 'GET' && path === '/v1/models') {
      return send(res, 200, { object: 'list', data: [{ id: model, object: 'model', created: 0, owned_by: 'clotho' }] });
    }
    if (req.method === 'POST' && (path === '/v1/chat/completions' || path === '/v1/completions')) {
      if (typeof json === 'string') return send(res, 400, openAIError('body is not JSON', 400));
      return complete(req, res, path, json);
    }
    send(res, 404, openAIError(`no route ${req.method} ${path}`, 404));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, openAIError(`responder failed: ${String(err)}`, 500));
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    get calls() {
      return calls;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(text);
}

/** An error body in OpenAI's (and current vLLM's) format. */
export function openAIError(message: string, code: number): { error: { message: string; type: string; param: null; code: number } } {
  return { error: { message, type: 'scripted_error', param: null, code } };
}

function generated(choice: ScriptedChoice): { tokenIds: number[]; logprobs: number[] } {
  const tokenIds = choice.tokenIds ?? encodeCompletion(choice.text, choice.toolCalls);
  return { tokenIds, logprobs: choice.logprobs ?? tokenIds.map(defaultLogprob) };
}

function finishReason(choice: ScriptedChoice): string {
  return choice.finishReason ?? (choice.toolCalls?.length ? 'tool_calls' : 'stop');
}

function usage(promptTokens: number, choices: { tokenIds: number[] }[]) {
  const completion = choices.reduce((sum, c) => sum + c.tokenIds.length, 0);
  return { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
}

function chatResponse(model: string, body: z.infer<typeof ChatBodySchema>, choices: ScriptedChoice[], withIds: boolean) {
  const promptTokenIds = encodeChat(body.messages);
  const outputs = choices.map(generated);
  return {
    id: 'chatcmpl-scripted',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: choices.map((choice, index) => {
      const { tokenIds, logprobs } = outputs[index]!;
      return {
        index,
        message: { role: 'assistant', content: choice.text, tool_calls: choice.toolCalls ?? [], reasoning: null },
        logprobs: body.logprobs
          ? {
              content: logprobs.map((logprob, i) => {
                const token = tokenText(tokenIds[i] ?? 0);
                return { token, logprob, bytes: [...Buffer.from(token)], top_logprobs: [] };
              }),
            }
          : null,
        finish_reason: finishReason(choice),
        stop_reason: null,
        ...(withIds ? { token_ids: tokenIds } : {}),
      };
    }),
    usage: usage(promptTokenIds.length, outputs),
    prompt_logprobs: null,
    ...(withIds ? { prompt_token_ids: promptTokenIds } : {}),
  };
}

function textResponse(model: string, body: z.infer<typeof TextBodySchema>, choices: ScriptedChoice[], withIds: boolean) {
  const promptTokenIds = typeof body.prompt === 'string' ? encodeText(body.prompt) : body.prompt;
  const outputs = choices.map(generated);
  return {
    id: 'cmpl-scripted',
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: choices.map((choice, index) => {
      const { tokenIds, logprobs } = outputs[index]!;
      return {
        index,
        text: choice.text,
        logprobs:
          body.logprobs != null ? { tokens: tokenIds.map(tokenText), token_logprobs: logprobs, top_logprobs: null, text_offset: [] } : null,
        finish_reason: finishReason(choice),
        stop_reason: null,
        ...(withIds ? { token_ids: tokenIds, prompt_token_ids: promptTokenIds } : {}),
      };
    }),
    usage: usage(promptTokenIds.length, outputs),
  };
}
