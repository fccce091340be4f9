import { createAdaptorServer } from '@hono/node-server';
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { Hono, type Context } from 'hono';
import { EVENT_STREAM_HEADERS, eventStreamBody } from '../inference/chat-stream.js';
import type { Continuation } from '../inference/continuation.js';
import type { InferenceClient } from '../inference/types.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { storeKey } from '../schema/store-keys.js';
import { VerifiersResultSchema } from '../schema/verifiers.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { HarnessSession } from './harness-session.js';
import { sequenceOf, verifiersKey } from './verifiers.js';

/**
 * The session host of a verifiers worker (issue 39): what the Python worker's router hands every model call of an
 * episode to, and where a finished episode is kept. It runs in the command that started the worker, on a Unix socket
 * of its own, and answers:
 *
 * - `POST /item-<i>/sample-<s>/attempt-<a>/<agent>-<n>/v1/chat/completions`: one call of a trace, by the trace's
 *   harness session (`HarnessSession`: the policy's chat template and exact tokens, or messages only; recorded before
 *   the answer goes back; a new attempt answers from the records until the first request that differs), JSON or the
 *   completion's events when the call streams; `x-clotho-replayed` says whether it was answered from the record;
 * - `POST …/attempt-<a>/finish`: the episode's result, which it keeps with each trace's sequence (503 when the
 *   policy's server failed in the attempt: an infrastructure failure, never a result);
 * - `DELETE …/attempt-<a>`: the attempt is over; `GET …/sample-<s>/result`: the kept result, if any;
 * - `POST /items`, `GET /items/<sha256>`: a large task's data, kept by content under `<run>/<env>/items/`.
 */
export interface VerifiersHostOptions {
  store: TrajectoryStore;
  runId: string;
  environment: string;
  /** The policy, known once the worker has said which model the run asks (its ready line): calls wait for it. */
  inference: Promise<VerifiersHostInference>;
}

/** The policy the sessions ask. */
export interface VerifiersHostInference {
  /** The model name answers carry (`-m`). */
  model: string;
  /** Token-in generation (exact tokens); absent: `messagesOnly`'s server, messages alone. */
  continuation?: Continuation;
  messagesOnly?: InferenceClient;
}

/** Tokens a call may generate when it does not say (`--sampling.max-tokens` absent). */
export const DEFAULT_MAX_TOKENS = 2048;

interface TraceSession {
  session: HarnessSession;
  tools: Record<string, unknown>[] | null;
}

interface Attempt {
  sessions: Map<string, TraceSession>;
  abort: AbortController;
  /** The policy's server failed during the attempt: it ends as an infrastructure failure. */
  failure?: Error;
}

const SAMPLE = '/:item{item-[0-9]+}/:sample{sample-[0-9]+}';
const ATTEMPT = `${SAMPLE}/:attempt{attempt-[0-9]+}`;
/** A path parameter's number (`item-3` → 3). */
const numberOf = (c: Context, name: string) => Number(c.req.param(name)!.split('-')[1]);
const openAIError = (c: Context, status: 400 | 404 | 503, message: string) =>
  c.json({ error: { message, type: status === 503 ? 'server_error' : 'invalid_request_error', code: status } }, status);

export function createVerifiersHost(options: VerifiersHostOptions): { app: Hono; close(): void } {
  const { store, runId, environment } = options;
  const attempts = new Map<string, Attempt>();
  const address = (c: Context) => ({ runId, environment, itemIndex: numberOf(c, 'item') });
  const attemptOf = (c: Context): Attempt => {
    const id = `${c.req.param('item')}/${c.req.param('sample')}/${c.req.param('attempt')}`;
    let attempt = attempts.get(id);
    if (!attempt) attempts.set(id, (attempt = { sessions: new Map(), abort: new AbortController() }));
    return attempt;
  };
  const end = (c: Context) => {
    const id = `${c.req.param('item')}/${c.req.param('sample')}/${c.req.param('attempt')}`;
    attempts.get(id)?.abort.abort(new Error('the episode ended'));
    attempts.delete(id);
  };

  const app = new Hono();
  app.onError((error, c) => c.json({ error: { message: error.message, type: 'server_error', code: 500 } }, 500));
  app.get('/v1/models', async (c) =>
    c.json({ object: 'list', data: [{ id: (await options.inference).model, object: 'model', owned_by: 'clotho' }] }),
  );

  app.post(`${ATTEMPT}/:trace{[A-Za-z0-9._-]+}/v1/chat/completions`, async (c) => {
    const attempt = attemptOf(c);
    const key = c.req.param('trace');
    const body = (await c.req.json()) as Record<string, unknown>;
    const { model, continuation, messagesOnly } = await options.inference;
    // Made between awaits: two calls of one trace never make two sessions.
    let trace = attempt.sessions.get(key);
    if (!trace) {
      const sample = numberOf(c, 'sample');
      const session = new HarnessSession({
        store,
        callKey: (call) => verifiersKey(address(c), sample, key, `call-${call}`),
        ...(continuation ? { continuation } : {}),
        ...(messagesOnly ? { messagesOnly } : {}),
        model,
        // verifiers imposes the run's sampling on every request; its limits (turns, tokens) are its own.
        maxCalls: Number.MAX_SAFE_INTEGER,
        maxTokens: Number.MAX_SAFE_INTEGER,
        signal: attempt.abort.signal,
        onProgress: () => undefined,
        onBudgetSpent: () => undefined,
        onInfrastructureFailure: (error) => (attempt.failure ??= error),
      });
      attempt.sessions.set(key, (trace = { session, tools: null }));
    }
    if (Array.isArray(body.tools)) trace.tools = body.tools as Record<string, unknown>[];
    if (body.max_tokens == null && body.max_completion_tokens == null) body.max_tokens = DEFAULT_MAX_TOKENS;
    const replayedBefore = trace.session.replayed;
    const answer = await trace.session.chat(body);
    c.header('x-clotho-replayed', String(trace.session.replayed > replayedBefore));
    if (!answer.events) return c.json(answer.body as object, answer.status as 200);
    return c.body(eventStreamBody(answer.events), answer.status as 200, EVENT_STREAM_HEADERS);
  });

  app.post(`${ATTEMPT}/finish`, async (c) => {
    const attempt = attemptOf(c);
    if (attempt.failure) return openAIError(c, 503, `the model server failed: ${attempt.failure.message}`);
    const result = VerifiersResultSchema.parse(await c.req.json());
    const sample = numberOf(c, 'sample');
    for (const trace of result.traces) {
      const session = attempt.sessions.get(trace.key);
      if (!session) continue;
      const sequence = sequenceOf(session.session, trace.stop, session.tools);
      await store.put(verifiersKey(address(c), sample, c.req.param('attempt')!, trace.key), sequence);
    }
    // Last: a result is an episode whose sequences are kept.
    await store.put(verifiersKey(address(c), sample, 'result'), result);
    end(c);
    return c.json({ ok: true });
  });

  app.delete(ATTEMPT, (c) => {
    end(c);
    return c.json({ ok: true });
  });

  app.get(`${SAMPLE}/result`, async (c) => {
    const result = await store.tryGet(verifiersKey(address(c), numberOf(c, 'sample'), 'result'));
    return result === undefined ? openAIError(c, 404, 'no result') : c.json(result as object);
  });

  app.post('/items', async (c) => {
    const data = await c.req.json();
    const sha = createHash('sha256').update(canonicalJson(data)).digest('hex');
    await store.put(storeKey(runId, environment, 'items', sha), data);
    return c.json({ key: sha });
  });

  app.get('/items/:sha{[0-9a-f]{64}}', async (c) => {
    const data = await store.tryGet(storeKey(runId, environment, 'items', c.req.param('sha')));
    return data === undefined ? openAIError(c, 404, 'no such task') : c.json(data as object);
  });

  return {
    app,
    close() {
      for (const attempt of attempts.values()) attempt.abort.abort(new Error('the session host closed'));
      attempts.clear();
    },
  };
}

/** A listening host: its socket, and how to stop it. */
export interface RunningVerifiersHost {
  socket: string;
  close(): Promise<void>;
}

/** Serves {@link createVerifiersHost} on a Unix socket (a stale socket file from a killed command is replaced). */
export async function serveVerifiersHost(socket: string, options: VerifiersHostOptions): Promise<RunningVerifiersHost> {
  const host = createVerifiersHost(options);
  const server = createAdaptorServer({ fetch: host.app.fetch }) as Server;
  await rm(socket, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, resolve);
  });
  return {
    socket,
    async close() {
      host.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(socket, { force: true });
    },
  };
}
