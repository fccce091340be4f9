import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import type { z } from 'zod';
import { chatCompletionEvents, completionEvents, EVENT_STREAM_HEADERS, eventStreamBody, includesUsage } from '../chat-stream.js';
import { bearerAuth, INFERENCE_FACE, openAIUnauthorized } from '../../config/listening.js';
import { ChatTemplate } from './chat-template.js';
import { WEIGHTS_VERSION_HEADER } from '../weights-version.js';
import { WeightsRefusedError, type LocalEngine } from './engine.js';
import { chatLogprobs, completionLogprobs, generateLogprobs, generatePromptLogprobs, promptLogprobsVllm, usage } from './openai-format.js';
import {
  ChatCompletionRequestSchema,
  CompletionRequestSchema,
  GenerateRequestSchema,
  invalidRequest,
  type GenerateRequest,
  type OpenAiError,
  WeightsRequestSchema,
} from './server-schemas.js';
import { EngineRequestError, type Weights } from './weights.js';
import { fileInWeightsDir, NO_WEIGHTS_DIR, NOT_IN_WEIGHTS_DIR } from './weights-dir.js';

const created = () => Math.floor(Date.now() / 1000);

/** A completion as JSON, or as server-sent events when the request asked to stream. */
function answer<T extends object>(
  c: Context,
  request: { stream?: boolean | null; stream_options?: unknown },
  events: (response: T, includeUsage: boolean) => string[],
  response: T,
): Response {
  if (!request.stream) return c.json(response);
  return c.body(eventStreamBody(events(response, includesUsage(request))), 200, EVENT_STREAM_HEADERS);
}

function errorBody(message: string, param: string | null, type = 'invalid_request_error'): OpenAiError {
  return { error: { message, type, param, code: null } };
}

async function parseBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S> | Response> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    return c.json(errorBody('request body is not valid JSON', null), 400);
  }
  const parsed = schema.safeParse(body);
  return parsed.success ? parsed.data : c.json(invalidRequest(parsed.error), 400);
}

/** The sampling fields every route shares, in the engine's terms. */
const sampling = (r: Pick<GenerateRequest, 'n' | 'temperature' | 'top_p' | 'seed' | 'stop'>) => ({
  n: r.n,
  temperature: r.temperature,
  topP: r.top_p,
  seed: r.seed,
  stop: r.stop,
});

/** Who may use the server, and where new weights come from (`clotho inference --token --weights-dir`). */
export interface InferenceAppOptions {
  /** Every request but `GET /health` needs `Authorization: Bearer <token>` (`src/config/listening.ts`). */
  token?: string;
  /** The folder `POST /v1/weights` takes files from; without it every swap is refused. */
  weightsDir?: string;
}

/**
 * The OpenAI-compatible HTTP API of a {@link LocalEngine}: `/v1/models`, `/v1/completions`,
 * `/v1/chat/completions` (with vLLM's `return_token_ids` and `prompt_logprobs` extensions), vLLM's native `/generate`
 * (token ids in, token ids and logprobs out: what Atropos's ManagedServer calls with `server_type: vllm`) and
 * `/health`; and `/v1/weights`, where a trainer swaps new weights in (`POST`, a file in `weightsDir`) and reads which
 * are served (`GET`).
 * Every generation answers with the version of the weights that produced it (`x-clotho-weights-version`).
 * `stream: true` on the OpenAI routes is answered as server-sent events of the completion generated whole
 * (`chat-stream.ts`): RL rollouts want whole completions with their token ids, and agents that always stream get them.
 */
export function createInferenceApp(engine: LocalEngine, options: InferenceAppOptions = {}): Hono {
  const app = new Hono();
  if (options.token !== undefined) app.use(bearerAuth(options.token, INFERENCE_FACE, openAIUnauthorized));
  const template = engine.chatTemplate === undefined ? undefined : new ChatTemplate(engine.chatTemplate);
  const maxTokensLeft = (promptLength: number) => Math.max(1, engine.contextSize - promptLength);

  /** Runs a generation route on the weights served when it starts, and tells their version in a header. */
  const onWeights = <T>(c: Context, fn: (weights: Weights) => Promise<T>): Promise<T> =>
    engine.withWeights((weights) => {
      c.header(WEIGHTS_VERSION_HEADER, String(weights.version));
      return fn(weights);
    });

  app.onError((err, c) => {
    if (err instanceof EngineRequestError) return c.json(errorBody(err.message, 'prompt'), 400);
    if (err instanceof WeightsRefusedError) return c.json(errorBody(err.message, err.param), err.status);
    return c.json(errorBody(String(err instanceof Error ? err.message : err), null, 'server_error'), 500);
  });

  app.get('/health', (c) => c.json({ status: 'ok', weights_version: engine.weights.version }));

  app.get('/v1/models', (c) =>
    c.json({
      object: 'list',
      data: [
        {
          id: engine.modelName,
          object: 'model',
          created: created(),
          owned_by: 'clotho',
          max_model_len: engine.contextSize,
          weights_version: engine.weights.version,
        },
      ],
    }),
  );

  app.get('/v1/weights', (c) => c.json(engine.weights));

  app.post('/v1/weights', async (c) => {
    const r = await parseBody(c, WeightsRequestSchema);
    if (r instanceof Response) return r;
    if (options.weightsDir === undefined) return c.json(errorBody(NO_WEIGHTS_DIR, 'path', 'permission_error'), 403);
    const path = await fileInWeightsDir(options.weightsDir, r.path);
    if (path === undefined) return c.json(errorBody(NOT_IN_WEIGHTS_DIR, 'path', 'permission_error'), 403);
    const swap = await engine.swapWeights({ path, version: r.version });
    return c.json({ version: swap.version, path: swap.path, load_ms: swap.loadMs });
  });

  app.post('/v1/chat/completions', async (c) => {
    const r = await parseBody(c, ChatCompletionRequestSchema);
    if (r instanceof Response) return r;
    if (!template) return c.json(errorBody('the model has no chat template; use /v1/completions', 'messages'), 400);
    const prompt = engine.tokenize(
      template.render({
        messages: r.messages,
        tools: r.tools,
        addGenerationPrompt: r.add_generation_prompt,
        kwargs: r.chat_template_kwargs,
      }),
    );
    const topK = r.top_logprobs ?? 0;
    const samples = await onWeights(c, (w) =>
      w.generate(
        {
          promptTokens: prompt,
          ...sampling(r),
          maxTokens: r.max_completion_tokens ?? r.max_tokens ?? maxTokensLeft(prompt.length),
          logprobs: r.logprobs,
          topLogprobs: topK,
        },
        c.req.raw.signal,
      ),
    );
    return answer(c, r, chatCompletionEvents, {
      id: `chatcmpl-${randomUUID()}`,
      object: 'chat.completion',
      created: created(),
      model: engine.modelName,
      choices: samples.map((s, index) => ({
        index,
        message: { role: 'assistant', content: s.text },
        logprobs: r.logprobs ? chatLogprobs(engine, s, topK) : null,
        finish_reason: s.finishReason,
        ...(r.return_token_ids ? { token_ids: s.tokens.map((t) => t.id) } : {}),
      })),
      usage: usage(prompt.length, samples),
      ...(r.return_token_ids ? { prompt_token_ids: prompt } : {}),
    });
  });

  app.post('/v1/completions', async (c) => {
    const r = await parseBody(c, CompletionRequestSchema);
    if (r instanceof Response) return r;
    const prompt = typeof r.prompt === 'string' ? engine.tokenize(r.prompt) : r.prompt;
    if (prompt.length === 0) return c.json(errorBody('prompt is empty', 'prompt'), 400);
    const topK = r.logprobs ?? 0;
    const [samples, promptLogprobs] = await onWeights(c, (w) =>
      Promise.all([
        w.generate(
          {
            promptTokens: prompt,
            ...sampling(r),
            maxTokens: r.max_tokens,
            logprobs: r.logprobs !== undefined,
            topLogprobs: topK,
          },
          c.req.raw.signal,
        ),
        r.prompt_logprobs === undefined ? undefined : w.promptLogprobs(prompt, r.prompt_logprobs),
      ]),
    );
    const promptLogprobsBody = promptLogprobs && promptLogprobsVllm(engine, promptLogprobs);
    return answer(c, r, completionEvents, {
      id: `cmpl-${randomUUID()}`,
      object: 'text_completion',
      created: created(),
      model: engine.modelName,
      choices: samples.map((s, index) => ({
        index,
        text: s.text,
        logprobs: r.logprobs === undefined ? null : completionLogprobs(engine, s, topK),
        finish_reason: s.finishReason,
        ...(promptLogprobsBody ? { prompt_logprobs: promptLogprobsBody } : {}),
        ...(r.return_token_ids ? { prompt_token_ids: prompt, token_ids: s.tokens.map((t) => t.id) } : {}),
      })),
      usage: usage(prompt.length, samples),
      ...(r.return_token_ids ? { prompt_token_ids: prompt } : {}),
      ...(promptLogprobsBody ? { prompt_logprobs: promptLogprobsBody } : {}),
    });
  });

  // vLLM's native API: the prompt's token ids go to the engine as they are, so a multi-turn sequence keeps its tokens.
  app.post('/generate', async (c) => {
    const r = await parseBody(c, GenerateRequestSchema);
    if (r instanceof Response) return r;
    const prompt = typeof r.prompt === 'string' ? engine.tokenize(r.prompt) : r.prompt.prompt_token_ids;
    const withLogprobs = r.logprobs !== undefined && r.logprobs !== null;
    const topK = r.logprobs ?? 0;
    const { samples, promptLogprobs, version } = await onWeights(c, async (w) => {
      const [samples, promptLogprobs] = await Promise.all([
        w.generate(
          { promptTokens: prompt, ...sampling(r), maxTokens: r.max_tokens, logprobs: withLogprobs, topLogprobs: topK },
          c.req.raw.signal,
        ),
        r.prompt_logprobs === undefined || r.prompt_logprobs === null ? undefined : w.promptLogprobs(prompt, r.prompt_logprobs),
      ]);
      return { samples, promptLogprobs, version: w.version };
    });
    return c.json({
      text: samples.map((s) => s.text),
      prompt: engine.detokenize(prompt, true),
      finish_reasons: samples.map((s) => s.finishReason),
      ...(withLogprobs
        ? {
            logprobs: samples.map((s) => generateLogprobs(s, topK)),
            prompt_token_ids: prompt,
            token_ids: samples.map((s) => s.tokens.map((t) => t.id)),
          }
        : {}),
      ...(promptLogprobs ? { prompt_logprobs: generatePromptLogprobs(promptLogprobs) } : {}),
      weights_version: version,
    });
  });

  return app;
}

/** A listening server; `close` stops accepting and drops open connections. */
export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

/** Serves {@link createInferenceApp} on `host:port` (port 0 picks a free one). */
export function serveInference(engine: LocalEngine, port: number, host: string, options: InferenceAppOptions = {}): Promise<RunningServer> {
  const app = createInferenceApp(engine, options);
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port, hostname: host }, (info: AddressInfo) => {
      const shownHost = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({
        url: `http://${shownHost}:${info.port}`,
        close: () =>
          new Promise<void>((done) => {
            (server as Server).closeAllConnections();
            server.close(() => done());
          }),
      });
    }) as Server;
    server.once('error', reject);
  });
}
