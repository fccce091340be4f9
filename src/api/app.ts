import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import { z } from 'zod';
import {
  BatchAckSchema,
  BatchQuerySchema,
  BatchRenewSchema,
  EMPTY_EXAMPLE,
  EnvIdSchema,
  EnvRegistrationSchema,
  ScoredDataListPostSchema,
  ScoredDataPostSchema,
  TrainerRegistrationSchema,
  type TrainerRegistration,
} from '../schema/api.js';
import { API_FACE, bearerAuth } from '../config/listening.js';
import { keepExactNumbers } from './exact-json.js';
import { gzipResponses } from './gzip.js';
import { parseHotFirst } from '../schema/number-rows.js';
import { HotScoredDataListPostSchema, HotScoredDataPostSchema } from './hot-path.js';
import { ingest, summarise, toIngestGroup } from './ingest.js';
import { IrregularInput } from './irregular.js';
import { laxNumbers } from './lax-numbers.js';
import { PROMETHEUS_CONTENT_TYPE, renderPrometheus } from './metrics.js';
import { groupJson, responseJson } from './render.js';
import { messagesOnlyDetail, readJson, toDetail, unprocessable, validate } from './request.js';
import { keepsAsPosted } from './stored-group.js';
import {
  RegistrationConflictError,
  TEMPORAL_TRAINER_MODE,
  TrainerModeError,
  UnknownEnvError,
  type RegisterOutcome,
  type TrajectoryService,
} from './service.js';

/** 64 MiB: far above any real group (Atropos envs gzip bodies), low enough to stop a gzip bomb. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

/** Options of {@link createApi}. */
export interface ApiOptions {
  /** When set, every request needs `Authorization: Bearer <token>` (`src/config/listening.ts`). */
  token?: string;
  /** Largest request body, before and after gzip decompression. @default DEFAULT_MAX_BODY_BYTES */
  maxBodyBytes?: number;
  /** Where warnings about irregular posted groups go. @default console.warn */
  warn?: (line: string) => void;
  /** Told of every accepted `/register` the service reports on (`clotho api` prints the run it serves). */
  onRegistered?: (outcome: RegisterOutcome, registration: TrainerRegistration) => void;
}

/** `POST /register?new_run=true&trainer=temporal`: Clotho's additions to Atropos's registration. */
const RegisterQuerySchema = z.object({
  new_run: z.enum(['true', 'false']).optional(),
  trainer: z.enum(['http', 'temporal']).optional(),
});

/**
 * 409 in FastAPI's error shape, the message also as the status line's reason: Python trainers call
 * `raise_for_status()`, whose exception shows the reason and not the body.
 */
function refused(message: string): Response {
  return new Response(JSON.stringify({ detail: message }), {
    status: 409,
    statusText: `Conflict: ${message}`.replace(/[^\x20-\x7e]/g, ' '),
    headers: { 'Content-Type': 'application/json' },
  });
}

/** The most groups one `GET /queue` answers: each comes whole, tokens and all. */
export const MAX_QUEUE_PAGE = 200;

/** `GET /queue?offset=&limit=`: a page of the groups waiting for the trainer. */
const QueuePageSchema = z.object({
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(MAX_QUEUE_PAGE).default(50),
});

/** A uuid4 as Python's `uuid.uuid4().int`: a 128-bit integer in decimal digits. */
const uuid4Digits = () => BigInt(`0x${randomUUID().replaceAll('-', '')}`).toString();

const NOT_REGISTERED = { status: 'error', message: 'Trainer not registered. Call /register first.', batch: [] };
/** Why a late ack changed nothing: a slow trainer must not ack away the batch another trainer holds now. */
const LEASE_GONE = 'lease expired before the ack; the batch is served again under a new lease, and only that one can ack it';

/**
 * The Atropos-compatible trajectory API (ATROPOS-API.md §1) in front of a {@link TrajectoryService}.
 * It holds no state: every request is one or two service calls.
 */
export function createApi({ service, options = {} }: { service: TrajectoryService; options?: ApiOptions }): Hono {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const irregular = new IrregularInput(options.warn);
  const app = new Hono();

  /** Reads and validates a JSON body; a Response means the request was refused. */
  const body = async <S extends z.ZodType>(c: Context, schema: S): Promise<{ data: z.output<S> } | Response> => {
    const read = await readJson(c, maxBodyBytes);
    return read instanceof Response ? read : validate(c, schema, read.value);
  };
  /**
   * Reads posted groups: strictly, or else with numbers made lax as pydantic makes them (`coerced` says which
   * groups); then their free-form numbers are kept as posted.
   */
  const scoredBody = async <S extends z.ZodType>(c: Context, hot: z.ZodType<z.output<S>>, schema: S) => {
    const read = await readJson(c, maxBodyBytes);
    if (read instanceof Response) return read;
    // A messages-only group would fail on its missing tokens; the 422 says what it is instead.
    const messagesOnly = messagesOnlyDetail(read.value);
    if (messagesOnly.length > 0) return unprocessable(c, messagesOnly);
    const strict = parseHotFirst(hot, schema, read.value);
    let data: z.output<S>;
    let coerced: boolean[] = [];
    if (strict.success) data = strict.data;
    else {
      const lax = laxNumbers(read.value);
      if (!lax) return unprocessable(c, toDetail(strict.error.issues, ['body']));
      const valid = validate(c, schema, lax.body);
      if (valid instanceof Response) return valid;
      data = valid.data;
      coerced = lax.coerced;
    }
    const groups: unknown = data;
    keepExactNumbers(read.text, (Array.isArray(groups) ? groups : [groups]) as Record<string, unknown>[]);
    // What was posted, when validation took it strictly: a single group may then be stored as it came.
    return { data, coerced, posted: strict.success ? read : undefined };
  };
  /** JSON text written by `render.ts` (floats as floats, free-form numbers as posted). */
  const jsonText = (c: Context, text: string) => c.body(text, 200, { 'Content-Type': 'application/json' });

  app.use(gzipResponses(1000));
  // Atropos allows every origin with credentials; echoing the origin is what makes that legal.
  app.use(cors({ origin: (origin) => origin || '*', credentials: true }));
  if (options.token !== undefined) app.use(bearerAuth(options.token, API_FACE, (c, detail) => c.json({ detail }, 401)));
  app.notFound((c) => c.json({ detail: 'Not Found' }, 404));
  app.onError((error, c) => {
    // One line per failure: the message and its innermost cause (Temporal wraps the server's reason).
    let cause: unknown = error;
    while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
    console.error(`clotho api: ${c.req.method} ${c.req.path}: ${error.message}${cause === error ? '' : `: ${(cause as Error).message}`}`);
    return c.text('Internal Server Error', 500);
  });

  app.get('/', (c) => c.json({ message: 'AtroposLib API' }));

  app.post('/register', async (c) => {
    const query = validate(c, RegisterQuerySchema, c.req.query(), ['query']);
    if (query instanceof Response) return query;
    const req = await body(c, TrainerRegistrationSchema);
    if (req instanceof Response) return req;
    const uuid = uuid4Digits();
    try {
      const newRun = query.data.new_run === undefined ? undefined : query.data.new_run === 'true';
      const outcome = await service.register(req.data, uuid, { newRun, trainer: query.data.trainer });
      if (outcome) options.onRegistered?.(outcome, req.data);
    } catch (error) {
      if (!(error instanceof RegistrationConflictError || error instanceof TrainerModeError)) throw error;
      return refused(error.message);
    }
    // Raw digits: a JS number would round the 128-bit integer Atropos returns.
    return c.body(`{"uuid":${uuid}}`, 200, { 'Content-Type': 'application/json' });
  });

  app.post('/register-env', async (c) => {
    const req = await body(c, EnvRegistrationSchema);
    return req instanceof Response ? req : c.json(await service.registerEnv(req.data));
  });

  app.post('/disconnect-env', async (c) => {
    const req = await body(c, EnvIdSchema);
    return req instanceof Response ? req : c.json(await service.disconnectEnv(req.data.env_id));
  });

  app.get('/wandb_info', async (c) => c.json(await service.wandbInfo()));
  app.get('/info', async (c) => c.json(await service.info()));
  app.get('/status', async (c) => c.json(await service.status()));
  app.get('/latest_example', async (c) => {
    const latest = await service.latestExample();
    return latest ? jsonText(c, groupJson(latest)) : c.json(EMPTY_EXAMPLE);
  });
  app.get('/metrics', async (c) =>
    c.body(renderPrometheus(await service.metrics(), irregular.counts), 200, { 'Content-Type': PROMETHEUS_CONTENT_TYPE }),
  );

  app.get('/reset_data', async (c) => {
    await service.reset();
    return c.text('Reset successful');
  });

  app.get('/batch', async (c) => {
    const query = validate(c, BatchQuerySchema, c.req.query(), ['query']);
    if (query instanceof Response) return query;
    const leaseSeconds = query.data.lease_seconds;
    const taken = await service.takeBatch(leaseSeconds === undefined ? {} : { leaseSeconds });
    if (taken.status === 'not_registered') return c.json(NOT_REGISTERED);
    if (taken.status === 'empty') return c.json({ batch: null });
    // Atropos's error shape, which trainers read and raise with (the example trainer), rather than an empty batch.
    if (taken.status === 'trainer_queue') return c.json({ status: 'error', message: TEMPORAL_TRAINER_MODE, batch: [] });
    if (taken.leaseExpiresAt === null) return jsonText(c, responseJson({ batch: taken.batch }, { groups: ['batch'] }));
    const leased = { batch: taken.batch, batch_id: taken.batchId, lease_expires_at: taken.leaseExpiresAt };
    return jsonText(c, responseJson(leased, { groups: ['batch'] }));
  });

  // Clotho's own: the groups waiting for the trainer, read without taking any (`clotho view --api`).
  app.get('/queue', async (c) => {
    const query = validate(c, QueuePageSchema, c.req.query(), ['query']);
    if (query instanceof Response) return query;
    const { total, groups } = await service.waitingGroups(query.data);
    const rows = groups.map(({ id, envId, policyVersion, receivedAt, group }) =>
      responseJson({ id, env_id: envId, policy_version: policyVersion, received_at: receivedAt, group }, { groups: ['group'] }),
    );
    return jsonText(c, `{"total":${total},"groups":[${rows.join(',')}]}`);
  });

  app.post('/batch/ack', async (c) => {
    const req = await body(c, BatchAckSchema);
    if (req instanceof Response) return req;
    const outcome = await service.ackBatch(req.data.batch_id);
    if (outcome === 'acked') return c.json({ status: 'success' });
    if (outcome === 'expired') return c.json({ status: 'failure', error: LEASE_GONE }, 409);
    return c.json({ status: 'failure', error: `unknown batch_id ${req.data.batch_id}` }, 404);
  });

  // Clotho's own: a trainer holding batches until its next checkpoint keeps their leases alive.
  app.post('/batch/renew', async (c) => {
    const req = await body(c, BatchRenewSchema);
    if (req instanceof Response) return req;
    return c.json({ leases: await service.renewLeases(req.data.batch_ids, req.data.lease_seconds) });
  });

  app.get('/batch/:id', async (c) => {
    const batchId = c.req.param('id');
    const batch = await service.getBatchById(batchId);
    return batch
      ? jsonText(c, responseJson({ batch, batch_id: batchId }, { groups: ['batch'] }))
      : c.json({ detail: 'Batch not found' }, 404);
  });

  app.post('/scored_data', async (c) => {
    const req = await scoredBody(c, HotScoredDataPostSchema, ScoredDataPostSchema);
    if (req instanceof Response) return req;
    const raw = req.posted && keepsAsPosted(req.posted.value, req.data) ? req.posted.bytes : undefined;
    const results = await ingest(c, service, [toIngestGroup(req.data, c.req.header('Idempotency-Key'), raw)], true);
    if (results instanceof Response) return results;
    irregular.record([req.data], req.coerced);
    return c.json(results[0]);
  });

  app.post('/scored_data_list', async (c) => {
    const req = await scoredBody(c, HotScoredDataListPostSchema, ScoredDataListPostSchema);
    if (req instanceof Response) return req;
    const groups = req.data.map((post) => toIngestGroup(post));
    const results = groups.length > 0 ? await ingest(c, service, groups, false) : [];
    if (results instanceof Response) return results;
    irregular.record(req.data, req.coerced);
    return c.json(summarise(results));
  });

  // Atropos's env client sends the env id as a JSON body on a GET; `?env_id=` serves everyone else.
  app.get('/status-env', async (c) => {
    const read = await readJson(c, maxBodyBytes);
    if (read instanceof Response) return read;
    const fromQuery = read.value === undefined && c.req.query('env_id') !== undefined;
    const where = fromQuery ? 'query' : 'body';
    const req = fromQuery
      ? validate(c, z.object({ env_id: z.coerce.number().int() }), c.req.query(), ['query'])
      : validate(c, EnvIdSchema, read.value);
    if (req instanceof Response) return req;
    try {
      // Atropos computes both as Python floats: a trainer or env reading them gets `1.0`, not `1`.
      return jsonText(c, responseJson(await service.statusEnv(req.data.env_id), { floats: ['env_weight', 'unallocated_fraction'] }));
    } catch (error) {
      if (!(error instanceof UnknownEnvError)) throw error;
      return unprocessable(c, [{ loc: [where, 'env_id'], msg: error.message, type: 'value_error' }]);
    }
  });

  return app;
}
