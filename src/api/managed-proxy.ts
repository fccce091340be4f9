import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { responseJson } from './render.js';
import { bearerAuth, openAIUnauthorized, PROXY_FACE } from '../config/listening.js';
import { ServerConfigSchema, SERVER_TYPES, type ServerConfig } from '../config/schemas.js';
import { ChatRequestSchema, type ChatRequest } from '../schema/openai-chat.js';
import { chatCompletionEvents, EVENT_STREAM_HEADERS, eventStreamBody, includesUsage } from '../inference/chat-stream.js';
import { InferenceError } from '../inference/errors.js';
import { ManagedSession, nodeJson, type SessionRequest } from '../inference/managed-session.js';
import { createServerManager, type ServerManager } from '../inference/server-manager.js';
import type { Tokenizer } from '../inference/tokenizer.js';

/**
 * Atropos's ManagedServer OpenAI proxy (`managed_server_proxy.py`), same endpoints and shapes: agent code that
 * speaks plain OpenAI gets a session URL (`{proxy}/{uuid}/v1`), and the session records each sequence's exact
 * token ids, masks and logprobs, ready for a scored group (`GET /{uuid}/nodes`). Every prompt is rendered here with
 * the policy's chat template and sent as token ids, so a multi-turn sequence keeps the ids the model generated.
 */
export interface ManagedProxyOptions {
  /** The policy's inference servers; each session is pinned to one (they must take token-id prompts). */
  servers: ServerConfig[];
  /** The served model's tokenizer (its chat template renders every prompt). */
  tokenizer: Tokenizer;
  /** Reported in responses and `/v1/models`. @default the first server's model_name */
  modelName?: string;
  /** @default one `createServerManager` per server */
  createManager?: (server: ServerConfig) => ServerManager;
  /** Every request but `GET /health` needs `Authorization: Bearer <token>` (`src/config/listening.ts`). @default none */
  token?: string;
}

export interface ManagedProxy {
  app: Hono;
  /** Stops the servers' health checks; sessions answer 500 afterwards. */
  close(): void;
}

interface Pool {
  config: ServerConfig;
  manager: ServerManager;
}

interface Session {
  uuid: string;
  state: ManagedSession;
  pool: Pool;
  toolParser: string;
  createdAt: number;
  lastAccessed: number;
  /** Requests of one session run one at a time: its sequences are matched by prefix, as in Atropos. */
  queue: Promise<unknown>;
}

const SessionCreateSchema = z.looseObject({
  tool_parser: z.string().default('hermes'),
  track_tree: z.boolean().default(false),
  base_url: z.string().nullish(),
});

const SetupSchema = z.looseObject({
  model_name: z.string().optional(),
  servers: z
    .array(
      z.looseObject({
        base_url: z.string(),
        server_type: z.enum(SERVER_TYPES).default('vllm'),
        api_key: z.string().default(''),
        num_max_requests_at_once: z.number().int().positive().default(512),
        num_requests_for_eval: z.number().int().positive().default(64),
        timeout: z.number().positive().default(1200),
      }),
    )
    .default([]),
});

/** An error in OpenAI's shape, which Atropos's proxy answers with and OpenAI clients read. */
const openAIError = (c: Context, status: 400 | 404 | 422 | 500, message: string, type = 'invalid_request_error') =>
  c.json({ error: { message, type, code: status } }, status);

const sameUrl = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

/** Creates the proxy's app (serve it with `startManagedProxy`, or mount it in another Hono app). */
export function createManagedProxy(options: ManagedProxyOptions): ManagedProxy {
  const make = options.createManager ?? ((server: ServerConfig) => createServerManager({ servers: [server] }));
  const everCreated: ServerManager[] = [];
  const poolOf = (config: ServerConfig): Pool => {
    const manager = make(config);
    everCreated.push(manager);
    return { config, manager };
  };
  let pools = options.servers.map(poolOf);
  let modelName = options.modelName ?? options.servers[0]?.model_name ?? 'default';
  const { tokenizer } = options;
  const sessions = new Map<string, Session>();
  const app = new Hono();
  if (options.token !== undefined) app.use(bearerAuth(options.token, PROXY_FACE, openAIUnauthorized));

  const healthy = (pool: Pool) => pool.manager.status().some((s) => s.healthy);
  const freeSlots = (pool: Pool) => pool.manager.status().reduce((n, s) => n + s.limits.train - s.inFlight.train, 0);
  const invalid = (c: Context, error: z.ZodError) => openAIError(c, 422, z.prettifyError(error));
  const readBody = async (c: Context): Promise<unknown> => {
    const text = await c.req.text();
    return text.trim() === '' ? {} : JSON.parse(text);
  };

  /** Runs `work` after the session's earlier requests, so that they see each other's sequences. */
  const serialized = <T>(session: Session, work: () => Promise<T>): Promise<T> => {
    const run = session.queue.then(work, work);
    session.queue = run.catch(() => undefined);
    return run;
  };

  const sessionRequest = (session: Session, body: ChatRequest): SessionRequest => ({
    messages: body.messages,
    ...(body.tools?.length ? { tools: body.tools } : {}),
    parseTools: session.toolParser === 'hermes' && Boolean(body.tools?.length) && body.tool_choice !== 'none',
  });

  app.onError((error, c) => {
    if (error instanceof SyntaxError) return openAIError(c, 400, `request body is not JSON: ${error.message}`);
    return openAIError(c, 500, error.message, 'server_error');
  });
  app.notFound((c) => openAIError(c, 404, `no route ${c.req.method} ${c.req.path}`));

  app.get('/health', (c) =>
    c.json({
      status: 'ok',
      model: modelName,
      sessions: sessions.size,
      servers: pools.length,
      healthy_servers: pools.filter(healthy).length,
    }),
  );

  const models = (c: Context) =>
    c.json({ object: 'list', data: [{ id: modelName, object: 'model', created: Math.floor(Date.now() / 1000), owned_by: 'clotho' }] });
  app.get('/v1/models', models);

  app.post('/setup', async (c) => {
    const parsed = SetupSchema.safeParse(await readBody(c));
    if (!parsed.success) return invalid(c, parsed.error);
    if (parsed.data.model_name) modelName = parsed.data.model_name;
    if (parsed.data.servers.length > 0) {
      // Sessions keep the server they were pinned to; new sessions choose among these.
      pools = parsed.data.servers.map((s) =>
        poolOf(
          ServerConfigSchema.parse({
            base_url: s.base_url,
            server_type: s.server_type,
            api_key: s.api_key,
            model_name: modelName,
            num_max_requests_at_once: s.num_max_requests_at_once,
            num_requests_for_eval: s.num_requests_for_eval,
            timeout: s.timeout,
          }),
        ),
      );
    }
    return c.json({ status: 'ok', servers: pools.length, model_name: modelName });
  });

  app.get('/servers', (c) =>
    c.json({
      servers: pools.map((p, index) => ({
        index,
        base_url: p.config.base_url,
        healthy: healthy(p),
        model_name: p.config.model_name,
        server_type: p.config.server_type,
      })),
    }),
  );

  app.post('/sessions/create', async (c) => {
    const parsed = SessionCreateSchema.safeParse(await readBody(c));
    if (!parsed.success) return invalid(c, parsed.error);
    const { tool_parser: toolParser, track_tree: trackTree, base_url: baseUrl } = parsed.data;
    if (toolParser !== 'hermes' && toolParser !== 'none') {
      return openAIError(
        c,
        400,
        `tool_parser "${toolParser}" is not supported: Clotho parses Hermes <tool_call> blocks ("hermes"), or nothing ("none")`,
      );
    }
    let pool: Pool | undefined;
    if (baseUrl) {
      pool = pools.find((p) => sameUrl(p.config.base_url, baseUrl));
      if (!pool)
        return openAIError(
          c,
          404,
          `No server with base_url '${baseUrl}'. Available: ${JSON.stringify(pools.map((p) => p.config.base_url))}`,
        );
    } else {
      // The healthy server with the most free slots, as Atropos picks one (the first when none is healthy).
      pool =
        pools.filter(healthy).reduce<Pool | undefined>((best, p) => (!best || freeSlots(p) > freeSlots(best) ? p : best), undefined) ??
        pools[0];
    }
    if (!pool) return openAIError(c, 500, 'the proxy has no inference server (POST /setup)', 'server_error');
    const now = Date.now() / 1000;
    const session: Session = {
      uuid: randomUUID(),
      state: new ManagedSession(tokenizer, trackTree),
      pool,
      toolParser,
      createdAt: now,
      lastAccessed: now,
      queue: Promise.resolve(),
    };
    sessions.set(session.uuid, session);
    return c.json({ uuid: session.uuid, model_name: modelName, tool_parser: toolParser, base_url: pool.config.base_url, created_at: now });
  });

  app.get('/sessions', (c) =>
    c.json({
      sessions: [...sessions.values()].map((s) => ({
        uuid: s.uuid,
        model_name: modelName,
        base_url: s.pool.config.base_url,
        created_at: s.createdAt,
        last_accessed: s.lastAccessed,
        num_nodes: s.state.nodes.length,
      })),
    }),
  );

  /** The session a path names, or the 404 answer. */
  const sessionOf = (c: Context): Session | Response => {
    const session = sessions.get(c.req.param('uuid') ?? '');
    if (!session) return openAIError(c, 404, `Session ${c.req.param('uuid')} not found`);
    session.lastAccessed = Date.now() / 1000;
    return session;
  };

  const chatBody = async (c: Context): Promise<ChatRequest | Response> => {
    const parsed = ChatRequestSchema.safeParse(await readBody(c));
    if (!parsed.success) return invalid(c, parsed.error);
    if (parsed.data.messages.length === 0) return openAIError(c, 400, 'messages must not be empty');
    return parsed.data;
  };

  app.post('/:uuid/v1/chat/completions', async (c) => {
    const session = sessionOf(c);
    if (session instanceof Response) return session;
    const body = await chatBody(c);
    if (body instanceof Response) return body;
    const request = sessionRequest(session, body);
    return serialized(session, async () => {
      const prompt = session.state.prompt(request);
      const stop = typeof body.stop === 'string' ? [body.stop] : body.stop;
      let completions;
      try {
        completions = await session.pool.manager.generateTokens(
          {
            promptTokenIds: prompt.ids,
            n: body.n ?? 1,
            maxTokens: body.max_tokens ?? body.max_completion_tokens ?? 1024,
            temperature: body.temperature ?? 1,
            topP: body.top_p ?? 1,
            ...(stop?.length ? { stop } : {}),
            ...(typeof body.seed === 'number' ? { seed: body.seed } : {}),
          },
          { signal: c.req.raw.signal },
        );
      } catch (error) {
        const refused = error instanceof InferenceError && error.kind === 'request';
        return openAIError(
          c,
          refused ? 400 : 500,
          `Completion failed: ${(error as Error).message}`,
          refused ? 'invalid_request_error' : 'server_error',
        );
      }
      const id = `chatcmpl-${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      const answers = session.state.record(prompt, completions, request.parseTools, `call-${id.slice(8)}`);
      const generated = completions.reduce((n, completion) => n + (completion.tokenIds?.length ?? 0), 0);
      const response = {
        id,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: modelName,
        choices: answers.map((answer, index) => ({
          index,
          message: { role: 'assistant', content: answer.content, ...(answer.tool_calls ? { tool_calls: answer.tool_calls } : {}) },
          finish_reason: answer.tool_calls ? 'tool_calls' : (completions[index]!.finishReason ?? 'stop'),
        })),
        usage: { prompt_tokens: prompt.ids.length, completion_tokens: generated, total_tokens: prompt.ids.length + generated },
      };
      // An agent that streams (verifiers' chat program, opencode) gets the whole completion as OpenAI's chunks.
      if (!body.stream) return c.json(response);
      return c.body(eventStreamBody(chatCompletionEvents(response, includesUsage(body))), 200, EVENT_STREAM_HEADERS);
    });
  });

  app.post('/:uuid/v1/chat/completions/render', async (c) => {
    const session = sessionOf(c);
    if (session instanceof Response) return session;
    const body = await chatBody(c);
    if (body instanceof Response) return body;
    return serialized(session, async () => {
      const { ids } = session.state.prompt(sessionRequest(session, body));
      return c.json({ prompt_text: tokenizer.decode(ids), token_ids: ids, num_tokens: ids.length });
    });
  });

  app.get('/:uuid/v1/models', (c) => {
    const session = sessionOf(c);
    return session instanceof Response ? session : models(c);
  });

  app.get('/:uuid/nodes', (c) => {
    const session = sessionOf(c);
    if (session instanceof Response) return session;
    // Logprobs are floats, `1.0` on prompt positions, as Python writes them.
    const nodes = session.state.nodes.map((node) => responseJson(nodeJson(tokenizer, node), { floats: ['logprobs'] }));
    return c.body(`{"nodes":[${nodes.join(',')}]}`, 200, { 'Content-Type': 'application/json' });
  });

  app.delete('/:uuid', (c) => {
    const session = sessionOf(c);
    if (session instanceof Response) return session;
    sessions.delete(session.uuid);
    return c.json({ status: 'deleted', uuid: session.uuid });
  });

  return {
    app,
    close() {
      for (const manager of everCreated) manager.stop();
    },
  };
}
