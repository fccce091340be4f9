import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { defaultLogprob, encodeCompletion, encodeText, TOKEN, type RecordedRequest } from './scripted-openai.js';

/**
 * Real HTTP stand-ins for inference servers' native endpoints, each in its server's exact format:
 * vLLM (Atropos's `/generate` and the OpenAI server's `prompt_logprobs`), SGLang (`/generate`) and
 * llama.cpp (`/completion`, `/tokenize`, `/apply-template`). Token ids are Unicode code points as in
 * `scripted-openai.ts`; sample `i` says `sample i` and ends with `TOKEN.END`. Every server counts the
 * generation calls it holds open, can report itself unhealthy, and misbehaves on request.
 */

/** A misbehaviour for one generation call. */
export type Fault =
  | { status: number; body?: unknown }
  | { hang: true }
  | { destroySocket: true }
  /** A 200 answer with this exact (e.g. malformed) body. */
  | { raw: string };

export interface NativeServerOptions {
  /** Picks a fault for the `callIndex`-th generation call (0-based), or none. */
  fault?: (body: unknown, callIndex: number) => Fault | undefined;
  /** Holds each generation answer this long, so calls stay in flight. @default 0 */
  delayMs?: number;
}

export interface NativeServer {
  /** `http://127.0.0.1:<port>`: the server root (configure `base_url` as this plus `/v1`, or as is). */
  url: string;
  requests: RecordedRequest[];
  /** Generation calls so far. */
  readonly calls: number;
  /** Generation calls received and not yet answered. */
  readonly inFlight: number;
  readonly maxInFlight: number;
  /** When false, `/health` answers 503. */
  healthy: boolean;
  close(): Promise<void>;
}

/** A scripted sample: its text, ids and finish reason, cut at `maxTokens`. */
export function scriptedSample(index: number, maxTokens: number): { text: string; tokenIds: number[]; finish: 'stop' | 'length' } {
  const full = encodeCompletion(`sample ${index}`);
  const tokenIds = full.slice(0, maxTokens);
  const text = String.fromCodePoint(...tokenIds.filter((id) => id !== TOKEN.END));
  return { text, tokenIds, finish: tokenIds.length === full.length ? 'stop' : 'length' };
}

type Route = (body: unknown, call: { index: number; path: string }) => { status: number; body: unknown };

async function serve(
  routes: Record<string, Route>,
  generation: Set<string>,
  options: NativeServerOptions,
  unhealthyBody: unknown,
): Promise<NativeServer> {
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let calls = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const state = { healthy: true };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    let body: unknown = null;
    try {
      body = raw === '' ? null : JSON.parse(raw);
    } catch {
      body = raw;
    }
    requests.push({ method: req.method ?? 'GET', path, body, at: Date.now() });
    if (req.method === 'GET' && path === '/health') {
      return state.healthy ? send(res, 200, { status: 'ok' }) : send(res, 503, unhealthyBody);
    }
    const route = req.method === 'POST' ? routes[path] : undefined;
    if (!route) return send(res, 404, { detail: 'Not Found' });
    if (!generation.has(path)) {
      const answer = route(body, { index: -1, path });
      return send(res, answer.status, answer.body);
    }
    const index = calls++;
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    res.on('close', () => {
      inFlight -= 1;
    });
    const fault = options.fault?.(body, index);
    if (fault && 'hang' in fault) return;
    if (fault && 'destroySocket' in fault) return void req.socket.destroy();
    if (options.delayMs) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          resolve();
        }, options.delayMs);
        timers.add(timer);
      });
    }
    if (fault && 'raw' in fault) return send(res, 200, fault.raw);
    if (fault) return send(res, fault.status, fault.body ?? { detail: `scripted ${fault.status}` });
    const answer = route(body, { index, path });
    send(res, answer.status, answer.body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, { detail: String(err) });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get calls() {
      return calls;
    },
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    get healthy() {
      return state.healthy;
    },
    set healthy(value: boolean) {
      state.healthy = value;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

const ints = z.array(z.number().int());
const invalid = (error: z.ZodError) => ({ status: 400, body: { detail: z.prettifyError(error) } });
const tokenText = (id: number) => (id < 32 ? `<${id}>` : String.fromCodePoint(id));

const VllmGenerateSchema = z.looseObject({
  prompt: z.strictObject({ prompt_token_ids: ints.min(1) }),
  logprobs: z.number().int().min(0),
  n: z.number().int().positive().default(1),
  max_tokens: z.number().int().positive().default(16),
});
const VllmCompletionsSchema = z.looseObject({
  prompt: ints.min(1),
  max_tokens: z.number().int(),
  prompt_logprobs: z.number().int().min(0),
});

/** The teacher's scripted top candidates at position `p`: ids `1000 + 10p + j`, logprob `-(j+1)/8`, rank `j+1`. */
export function teacherTop(position: number, k: number): { id: number; logprob: number }[] {
  return Array.from({ length: k }, (_, j) => ({ id: 1000 + 10 * position + j, logprob: -(j + 1) / 8 }));
}

/**
 * vLLM: `POST /generate` as Atropos's `vllm_api_server.py` answers it (with `logprobs` set:
 * `logprobs` as `[[{id: lp}]]` per token, `token_ids`, `prompt_token_ids`), `POST /v1/completions`
 * with `prompt_logprobs` (position 0 null; then the top k plus the prompt's own token at rank 100),
 * and `GET /health` (an empty 200).
 */
export function startVllmServer(options: NativeServerOptions = {}): Promise<NativeServer> {
  const generate: Route = (json) => {
    const parsed = VllmGenerateSchema.safeParse(json);
    if (!parsed.success) return invalid(parsed.error);
    const { prompt, n, max_tokens } = parsed.data;
    const samples = Array.from({ length: n }, (_, i) => scriptedSample(i, max_tokens));
    return {
      status: 200,
      body: {
        text: samples.map((s) => s.text),
        prompt: prompt.prompt_token_ids.map(tokenText).join(''),
        finish_reasons: samples.map((s) => s.finish),
        logprobs: samples.map((s) => s.tokenIds.map((id) => [{ [id]: defaultLogprob(id) }])),
        prompt_token_ids: prompt.prompt_token_ids,
        token_ids: samples.map((s) => s.tokenIds),
      },
    };
  };
  const completions: Route = (json) => {
    const parsed = VllmCompletionsSchema.safeParse(json);
    if (!parsed.success) return invalid(parsed.error);
    const { prompt, prompt_logprobs: k } = parsed.data;
    const positions = prompt.map((own, p) => {
      if (p === 0) return null;
      const entries: Record<string, { logprob: number; rank: number; decoded_token: string }> = {};
      for (const [j, t] of teacherTop(p, k).entries()) entries[t.id] = { logprob: t.logprob, rank: j + 1, decoded_token: tokenText(t.id) };
      entries[own] ??= { logprob: defaultLogprob(own), rank: 100, decoded_token: tokenText(own) };
      return entries;
    });
    return {
      status: 200,
      body: {
        id: 'cmpl-native',
        object: 'text_completion',
        created: 0,
        model: 'native',
        choices: [{ index: 0, text: 'x', logprobs: null, finish_reason: 'length', stop_reason: null, prompt_logprobs: positions }],
        usage: { prompt_tokens: prompt.length, completion_tokens: 1, total_tokens: prompt.length + 1 },
      },
    };
  };
  return serve({ '/generate': generate, '/v1/completions': completions }, new Set(['/generate', '/v1/completions']), options, '');
}

const SglangGenerateSchema = z.looseObject({
  input_ids: ints.min(1),
  sampling_params: z.looseObject({ max_new_tokens: z.number().int().positive(), n: z.number().int().positive().default(1) }),
  return_logprob: z.literal(true),
});

/**
 * SGLang: `POST /generate` with `input_ids` answers one object (a list when `n` > 1) with `text`,
 * `output_ids` and `meta_info` (`finish_reason` as `{type, ...}`, `output_token_logprobs` as
 * `[logprob, id, null]`); `GET /health`.
 */
export function startSglangServer(options: NativeServerOptions = {}): Promise<NativeServer> {
  const generate: Route = (json, { index }) => {
    const parsed = SglangGenerateSchema.safeParse(json);
    if (!parsed.success) return invalid(parsed.error);
    const { input_ids, sampling_params } = parsed.data;
    const results = Array.from({ length: sampling_params.n }, (_, i) => {
      const s = scriptedSample(i, sampling_params.max_new_tokens);
      return {
        text: s.text,
        output_ids: s.tokenIds,
        meta_info: {
          id: `req-${index}-${i}`,
          finish_reason: s.finish === 'stop' ? { type: 'stop', matched: TOKEN.END } : { type: 'length', length: s.tokenIds.length },
          prompt_tokens: input_ids.length,
          completion_tokens: s.tokenIds.length,
          cached_tokens: 0,
          output_token_logprobs: s.tokenIds.map((id) => [defaultLogprob(id), id, null]),
          e2e_latency: 0.01,
        },
      };
    });
    return { status: 200, body: results.length === 1 ? results[0] : results };
  };
  return serve({ '/generate': generate }, new Set(['/generate']), options, { detail: 'unhealthy' });
}

const LlamaCompletionSchema = z.looseObject({
  prompt: ints.min(1),
  n_predict: z.number().int(),
  n_probs: z.number().int().min(0).default(0),
  return_tokens: z.boolean().default(false),
});
const SPECIAL: Record<string, number> = { '<|im_start|>': TOKEN.START, '<|im_end|>': TOKEN.END };

/** The llama.cpp stand-in's chat template (ChatML). */
export function llamaTemplate(messages: { role: string; content: unknown }[]): string {
  return messages.map((m) => `<|im_start|>${m.role}\n${String(m.content ?? '')}<|im_end|>\n`).join('') + '<|im_start|>assistant\n';
}

/** The stand-in's `/tokenize` with `parse_special`: ChatML markers are special ids, the rest code points. */
export function llamaTokenize(text: string): number[] {
  return text.split(/(<\|im_start\|>|<\|im_end\|>)/).flatMap((part) => (SPECIAL[part] !== undefined ? [SPECIAL[part]] : encodeText(part)));
}

/**
 * llama.cpp's `llama-server`: `POST /apply-template` (`{prompt}`), `POST /tokenize` (`{tokens}`),
 * `POST /completion` (one completion per request: `content`, `tokens` when `return_tokens`,
 * `stop_type`, `completion_probabilities` when `n_probs` > 0) and `GET /health` (503 while
 * "loading"). Request `i` answers `sample i`.
 */
export function startLlamaServer(options: NativeServerOptions = {}): Promise<NativeServer> {
  const completion: Route = (json, { index }) => {
    const parsed = LlamaCompletionSchema.safeParse(json);
    if (!parsed.success) return invalid(parsed.error);
    const { prompt, n_predict, n_probs, return_tokens } = parsed.data;
    const s = scriptedSample(index, n_predict < 0 ? Infinity : n_predict);
    const probs = s.tokenIds.map((id) => {
      const entry = { id, token: tokenText(id), bytes: [...Buffer.from(tokenText(id))], logprob: defaultLogprob(id) };
      return { ...entry, top_logprobs: [entry] };
    });
    return {
      status: 200,
      body: {
        index: 0,
        content: s.text,
        tokens: return_tokens ? s.tokenIds : [],
        id_slot: 0,
        stop: true,
        model: 'native',
        tokens_predicted: s.tokenIds.length,
        tokens_evaluated: prompt.length,
        generation_settings: { n_predict },
        prompt: prompt.map(tokenText).join(''),
        has_new_line: false,
        truncated: false,
        stop_type: s.finish === 'stop' ? 'eos' : 'limit',
        stopping_word: '',
        tokens_cached: 0,
        timings: {},
        ...(n_probs > 0 ? { completion_probabilities: probs } : {}),
      },
    };
  };
  const applyTemplate: Route = (json) => {
    const parsed = z.looseObject({ messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })) }).safeParse(json);
    return parsed.success ? { status: 200, body: { prompt: llamaTemplate(parsed.data.messages) } } : invalid(parsed.error);
  };
  const tokenize: Route = (json) => {
    const parsed = z.looseObject({ content: z.string() }).safeParse(json);
    return parsed.success ? { status: 200, body: { tokens: llamaTokenize(parsed.data.content) } } : invalid(parsed.error);
  };
  return serve({ '/completion': completion, '/apply-template': applyTemplate, '/tokenize': tokenize }, new Set(['/completion']), options, {
    error: { code: 503, message: 'Loading model', type: 'unavailable_error' },
  });
}
