import { Readable } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  BatchResponseSchema,
  EMPTY_EXAMPLE,
  IngestResultSchema,
  RegisterEnvResponseSchema,
  ScoredDataListResponseSchema,
  StatusEnvSchema,
} from '../schema/api.js';
import { SCORED_DATA_FIELDS } from '../schema/scored-data.js';
import { createApi } from './app.js';
import { RegistrationConflictError, TEMPORAL_TRAINER_MODE, TrainerModeError } from './service.js';
import { FakeTrajectoryService, sampleGroup } from '../../test/support/fake-trajectory-service.js';

const REGISTRATION = {
  wandb_group: 'g',
  wandb_project: 'p',
  batch_size: 4,
  max_token_len: 512,
  checkpoint_dir: 'ckpt',
  save_checkpoint_interval: 10,
  starting_step: 0,
  num_steps: 100,
};
const ENV = { max_token_length: 256, desired_name: 'gsm8k', weight: 1.0, group_size: 2 };

let service: FakeTrajectoryService;
let app: ReturnType<typeof createApi>;
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  app.request(path, { method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json', ...headers } });
const get = async (path: string) => (await (await app.request(path)).json()) as Record<string, unknown>;

/** Registers a trainer, starts it with one /batch, and registers one env (env_id 0). */
async function setUpRun(): Promise<void> {
  await post('/register', REGISTRATION);
  await app.request('/batch');
  await post('/register-env', ENV);
}

beforeEach(() => {
  service = new FakeTrajectoryService();
  app = createApi({ service });
});

describe('before a trainer registers', () => {
  it('answers the root, info, status, wandb_info and latest_example with Atropos defaults', async () => {
    expect(await get('/')).toEqual({ message: 'AtroposLib API' });
    expect(await get('/info')).toEqual({ batch_size: -1, max_token_len: -1 });
    expect(await get('/status')).toEqual({ current_step: 0, queue_size: 0 });
    expect(await get('/wandb_info')).toEqual({ group: null, project: null });
    expect(await get('/latest_example')).toEqual(EMPTY_EXAMPLE);
  });

  it("answers /batch with Atropos's error payload, in words, when batches go to trainer workers instead", async () => {
    service.takeBatch = async () => ({ status: 'trainer_queue' });
    const response = await app.request('/batch');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'error', batch: [], message: TEMPORAL_TRAINER_MODE });
    expect(TEMPORAL_TRAINER_MODE).toContain('Temporal-trainer mode');
  });

  it('refuses a registration the service refuses with 409, the message in the body and the status line', async () => {
    for (const error of [new TrainerModeError(TEMPORAL_TRAINER_MODE), new RegistrationConflictError('both configurations')]) {
      service.register = async () => {
        throw error;
      };
      const response = await post('/register', REGISTRATION);
      expect(response.status).toBe(409);
      expect(response.statusText).toBe(`Conflict: ${error.message}`);
      expect(await response.json()).toEqual({ detail: error.message });
    }
  });

  it("passes /register's new_run and trainer to the service, and refuses other values naming the field", async () => {
    const seen: unknown[] = [];
    service.register = async (_r, _u, options) => void seen.push(options);
    await post('/register?new_run=true&trainer=temporal', REGISTRATION);
    await post('/register?new_run=false', REGISTRATION);
    await post('/register', REGISTRATION);
    expect(seen).toEqual([
      { newRun: true, trainer: 'temporal' },
      { newRun: false, trainer: undefined },
      { newRun: undefined, trainer: undefined },
    ]);
    const bad = await post('/register?new_run=yes', REGISTRATION);
    expect(bad.status).toBe(422);
    expect(JSON.stringify(await bad.json())).toContain('new_run');
  });

  it('accepts the null wandb fields an Axolotl trainer sends', async () => {
    const response = await post('/register', { ...REGISTRATION, wandb_project: null, wandb_group: null });
    expect(response.status).toBe(200);
  });

  it('answers /batch with the not-registered error payload', async () => {
    expect(await get('/batch')).toEqual({ status: 'error', message: 'Trainer not registered. Call /register first.', batch: [] });
  });

  it('tells environments to wait until the trainer pulls its first batch', async () => {
    await post('/register', REGISTRATION);
    expect(await (await post('/register-env', ENV)).json()).toEqual({ status: 'wait for trainer to start' });
  });
});

describe('POST /register', () => {
  it('returns a uuid4 as raw 128-bit integer digits, the same the service recorded', async () => {
    const res = await post('/register', REGISTRATION);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const text = await res.text();
    const digits = /^\{"uuid":(\d+)\}$/.exec(text)?.[1];
    expect(digits).toBeDefined();
    const uuid = BigInt(digits!);
    expect(uuid).toBeLessThan(1n << 128n);
    expect(uuid).toBeGreaterThan(BigInt(Number.MAX_SAFE_INTEGER)); // would be mangled as a JS number
    expect((uuid >> 76n) & 0xfn).toBe(4n); // uuid version 4
    expect(service.requesters).toEqual([digits]);
    expect(await get('/info')).toEqual({ batch_size: 4, max_token_len: 512 });
    expect(await get('/wandb_info')).toEqual({ group: 'g', project: 'p' });
  });
});

describe('environments', () => {
  it('registers an env with the Atropos success shape and disconnects it', async () => {
    await post('/register', REGISTRATION);
    await app.request('/batch');
    const body = await (await post('/register-env', ENV)).json();
    expect(RegisterEnvResponseSchema.parse(body)).toEqual(body);
    expect(body).toEqual({
      status: 'success',
      env_id: 0,
      wandb_name: 'gsm8k_0',
      checkpoint_dir: 'ckpt',
      starting_step: 0,
      checkpoint_interval: 10,
      num_steps: 100,
    });
    expect(await (await post('/disconnect-env', { env_id: 0 })).json()).toEqual({ status: 'success' });
    expect(service.envs[0]?.connected).toBe(false);
    expect(await (await post('/disconnect-env', { env_id: 9 })).json()).toMatchObject({ status: 'failure', error: expect.any(String) });
  });

  it('serves /status-env from a JSON body on a GET and from ?env_id=', async () => {
    await setUpRun();
    await post('/scored_data', sampleGroup(2, 3, { env_id: 0 }));
    const fromQuery = await get('/status-env?env_id=0');
    expect(StatusEnvSchema.strict().parse(fromQuery)).toMatchObject({ self_queue_size: 1, max_group_size: 2 });
    // What aiohttp sends for session.get(url, json=...); app.request cannot carry a GET body, the Node request can.
    const incoming = Readable.from([Buffer.from(JSON.stringify({ env_id: 0 }))]);
    const res = await app.request('/status-env', { method: 'GET', headers: { 'Content-Type': 'application/json' } }, { incoming });
    expect(await res.json()).toEqual(fromQuery);
  });
});

describe('scored data', () => {
  it('receives a group and serves it back with exactly the 14 Atropos keys', async () => {
    await setUpRun();
    const res = await post('/scored_data', sampleGroup(2, 3, { env_id: 0, idempotency_key: 'k1', policy_version: 3, extra: 'x' }));
    expect(await res.json()).toEqual({ status: 'received' });
    const latest = await get('/latest_example');
    expect(Object.keys(latest)).toEqual(SCORED_DATA_FIELDS);
    expect(latest).toMatchObject({ ...sampleGroup(2, 3), env_id: 0, messages: null });
  });

  it('buffers a group whose size differs from the env group size', async () => {
    await setUpRun();
    expect(await (await post('/scored_data', sampleGroup(1, 3, { env_id: 0 }))).json()).toEqual({ status: 'buffered', buffer_size: 1 });
  });

  it('acknowledges a repeated idempotency key (body or header) without queueing twice', async () => {
    await setUpRun();
    const first = await post('/scored_data', sampleGroup(), { 'Idempotency-Key': 'abc' });
    expect(await first.json()).toEqual({ status: 'received' });
    const again = await post('/scored_data', sampleGroup(2, 3, { idempotency_key: 'abc' }));
    expect(IngestResultSchema.parse(await again.json())).toEqual({ status: 'received', duplicate: true });
    expect(service.queue).toHaveLength(1);
  });

  it('passes policy versions on and reports drops only to clients that sent them', async () => {
    await setUpRun();
    service.minPolicyVersion = 5;
    expect(await (await post('/scored_data', sampleGroup(2, 3, { policy_version: 4 }))).json()).toEqual({
      status: 'dropped',
      reason: 'stale',
    });
    expect(await (await post('/scored_data', sampleGroup())).json()).toEqual({ status: 'received' });
  });

  it('summarises /scored_data_list as Atropos does, adding counters only when non-zero', async () => {
    await setUpRun();
    const list = [
      sampleGroup(2, 3, { env_id: 0, idempotency_key: 'a' }),
      sampleGroup(1, 3, { env_id: 0 }),
      sampleGroup(1, 3, { env_id: 0 }),
      sampleGroup(2, 3, { idempotency_key: 'a' }),
    ];
    const body = await (await post('/scored_data_list', list)).json();
    expect(ScoredDataListResponseSchema.strict().parse(body)).toEqual(body);
    expect(body).toEqual({ status: 'received', groups_processed: 4, buffered: 2, last_buffer_size: 2, duplicates: 1 });
    expect(await (await post('/scored_data_list', [sampleGroup()])).json()).toEqual({ status: 'received', groups_processed: 1 });
    expect(await (await post('/scored_data_list', [])).json()).toEqual({ status: 'received', groups_processed: 0 });
  });
});

describe('a bounded queue', () => {
  it('answers posts 503 with Retry-After once the queue is full, and counts each refusal in /metrics', async () => {
    await setUpRun();
    service.maxQueueGroups = 2;
    expect((await post('/scored_data_list', [sampleGroup(), sampleGroup()])).status).toBe(200);
    const single = await post('/scored_data', sampleGroup());
    expect(single.status).toBe(503);
    expect(single.headers.get('retry-after')).toBe('1');
    expect(await single.json()).toEqual({ detail: expect.stringContaining('--max-queue-groups') });
    const list = await post('/scored_data_list', [sampleGroup(), sampleGroup(), sampleGroup()]);
    expect([list.status, list.headers.get('retry-after')]).toEqual([503, '1']);
    expect(service.queue).toHaveLength(2);
    const text = await (await app.request('/metrics')).text();
    expect(text).toContain('\nclotho_posts_refused_total 2\n');
    expect(text).toContain('\nclotho_groups_refused_total 4\n');
    // Room again once the trainer took a batch.
    await app.request('/batch');
    expect(await (await post('/scored_data', sampleGroup())).json()).toEqual({ status: 'received' });
  });
});

describe('batches', () => {
  it('serves {"batch": [...]} then {"batch": null}, advancing the step', async () => {
    await setUpRun();
    await post('/scored_data_list', [sampleGroup(), sampleGroup()]);
    const body = await get('/batch');
    expect(Object.keys(body)).toEqual(['batch']);
    expect(BatchResponseSchema.parse(body)).toBeTruthy();
    expect(body.batch).toHaveLength(2);
    expect(await get('/batch')).toEqual({ batch: null });
    expect(await get('/status')).toEqual({ current_step: 1, queue_size: 0 });
  });

  it('leases a batch, serves it by id, and acks it once', async () => {
    await setUpRun();
    await post('/scored_data_list', [sampleGroup(), sampleGroup()]);
    const leased = await get('/batch?lease_seconds=30');
    expect(leased).toEqual({ batch: expect.any(Array), batch_id: 'batch-1', lease_expires_at: service.now + 30 });
    expect(await get('/batch/batch-1')).toEqual({ batch: leased.batch, batch_id: 'batch-1' });
    expect((await app.request('/batch/nope')).status).toBe(404);
    expect(await (await post('/batch/ack', { batch_id: 'batch-1' })).json()).toEqual({ status: 'success' });
    const again = await post('/batch/ack', { batch_id: 'batch-1' });
    expect(again.status).toBe(404);
    expect(await again.json()).toMatchObject({ status: 'failure' });
  });

  it('answers 409 to an ack after the lease expired', async () => {
    await setUpRun();
    await post('/scored_data_list', [sampleGroup(), sampleGroup()]);
    await get('/batch?lease_seconds=5');
    service.now += 6;
    const res = await post('/batch/ack', { batch_id: 'batch-1' });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ status: 'failure', error: expect.stringMatching(/^lease expired before the ack; .*new lease/) });
  });

  it('renews leases, each answered apart, so that one renewed in time acks after its first end', async () => {
    await setUpRun();
    await post('/scored_data_list', [sampleGroup(), sampleGroup(), sampleGroup(), sampleGroup()]);
    await get('/batch?lease_seconds=5');
    await get('/batch?lease_seconds=5');
    service.now += 4;
    expect(await (await post('/batch/renew', { batch_ids: [], lease_seconds: 5 })).json()).toEqual({ leases: [] });
    const renewed = await post('/batch/renew', { batch_ids: ['batch-1', 'nope'], lease_seconds: 5 });
    expect(await renewed.json()).toEqual({
      leases: [
        { batch_id: 'batch-1', status: 'renewed', lease_expires_at: service.now + 5 },
        { batch_id: 'nope', status: 'unknown', lease_expires_at: null },
      ],
    });
    service.now += 4;
    expect((await post('/batch/ack', { batch_id: 'batch-1' })).status).toBe(200);
    expect((await post('/batch/ack', { batch_id: 'batch-2' })).status).toBe(409);
  });

  it('refuses a renewal without a positive lease_seconds or with ids that are not strings, naming the field', async () => {
    for (const [bad, field] of [
      [{ batch_ids: ['batch-1'] }, 'lease_seconds'],
      [{ batch_ids: ['batch-1'], lease_seconds: 0 }, 'lease_seconds'],
      [{ batch_ids: [1], lease_seconds: 5 }, 'batch_ids'],
    ] as const) {
      const res = await post('/batch/renew', bad);
      expect(res.status).toBe(422);
      expect(JSON.stringify(await res.json())).toContain(field);
    }
  });
});

describe('the waiting groups: GET /queue', () => {
  const queue = async (query = '') => {
    const res = await app.request(`/queue${query}`);
    return { status: res.status, text: await res.text() };
  };
  const idsOf = (text: string) => (JSON.parse(text) as { groups: { id: string }[] }).groups.map((g) => g.id);

  it('shows queued and buffered groups whole, floats as floats, and takes nothing from the trainer', async () => {
    await setUpRun();
    await post('/scored_data', sampleGroup(2, 3, { env_id: 0, idempotency_key: 'k1', policy_version: 3 }));
    await post('/scored_data', sampleGroup(1, 3, { env_id: 0, idempotency_key: 'small' }));
    const first = await queue();
    expect(first.status).toBe(200);
    const body = JSON.parse(first.text);
    expect(body.total).toBe(2);
    expect(body.groups[0]).toMatchObject({ id: 'k1', env_id: 0, policy_version: 3, received_at: service.now });
    expect(body.groups[0].group).toMatchObject({ ...sampleGroup(2, 3), env_id: 0 });
    expect(Object.keys(body.groups[0].group)).toEqual(SCORED_DATA_FIELDS);
    expect(idsOf(first.text)).toEqual(['k1', 'small']);
    // Atropos's float fields as Python writes floats: a trainer reading the queue gets what /batch would give it.
    expect(first.text).toContain('"scores":[1.0,0.0]');
    expect(first.text).toContain('"inference_logprobs":[[1.0,-0.5,-0.5],[1.0,-0.5,-0.5]]');

    await post('/scored_data', sampleGroup(2, 3, { env_id: 0, idempotency_key: 'k2' }));
    expect(idsOf((await queue()).text)).toEqual(['k1', 'k2', 'small']);
    expect(JSON.parse((await queue('?offset=1&limit=1')).text)).toMatchObject({ total: 3, groups: [{ id: 'k2' }] });
    // Reading it took nothing: the trainer's batch is the groups the queue showed, which then wait no more.
    const shown = JSON.parse((await queue('?limit=2')).text).groups.map((g: { group: unknown }) => g.group);
    expect((await get('/batch')).batch).toEqual(shown);
    expect(JSON.parse((await queue()).text)).toMatchObject({ total: 1, groups: [{ id: 'small' }] });
  });

  it('answers 422 naming the field for an offset or limit out of range', async () => {
    const cases: [string, string][] = [
      ['?limit=0', 'limit'],
      ['?limit=201', 'limit'],
      ['?limit=1.5', 'limit'],
      ['?offset=-1', 'offset'],
      ['?offset=x', 'offset'],
    ];
    for (const [query, field] of cases) {
      const res = await queue(query);
      expect(res.status, query).toBe(422);
      expect(JSON.parse(res.text).detail[0].loc, query).toEqual(['query', field]);
    }
    expect(JSON.parse((await queue('?limit=200')).text)).toEqual({ total: 0, groups: [] });
  });

  it('needs the bearer token when the API has one', async () => {
    app = createApi({ service, options: { token: 's3cret' } });
    const denied = await queue();
    expect(denied.status).toBe(401);
    expect(JSON.parse(denied.text).detail).toContain('Authorization: Bearer');
    const res = await app.request('/queue', { headers: { Authorization: 'Bearer s3cret' } });
    expect([res.status, await res.json()]).toEqual([200, { total: 0, groups: [] }]);
  });
});

describe('operations', () => {
  it('resets with text/plain "Reset successful"', async () => {
    await setUpRun();
    const res = await app.request('/reset_data');
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe('Reset successful');
    expect(await get('/info')).toEqual({ batch_size: -1, max_token_len: -1 });
  });

  it('renders /metrics in the Prometheus text format', async () => {
    await setUpRun();
    await post('/scored_data', sampleGroup(2, 3, { env_id: 0 }));
    const res = await app.request('/metrics');
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    expect(text).toContain('\nclotho_groups_received_total 1\n');
    expect(text).toContain('\nclotho_env_queue_depth{env="gsm8k_0"} 1\n');
  });

  it('allows every origin with credentials, as Atropos does', async () => {
    const res = await app.request('/scored_data', {
      method: 'OPTIONS',
      headers: { Origin: 'http://ui.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('http://ui.example');
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    expect(res.headers.get('access-control-allow-headers')).toMatch(/content-type/i);
  });

  it("answers unknown paths with FastAPI's 404", async () => {
    const res = await app.request('/nope');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: 'Not Found' });
  });
});
