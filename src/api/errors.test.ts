import { gzipSync } from 'node:zlib';
import { Readable } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { createApi } from './app.js';
import { FakeTrajectoryService, sampleGroup } from '../../test/support/fake-trajectory-service.js';
import type { ErrorDetail } from './request.js';

let service: FakeTrajectoryService;
let app: ReturnType<typeof createApi>;
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  app.request(path, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'Content-Type': 'application/json', ...headers },
  });

/** Posts and returns the 422 detail, failing if the status is not 422. */
async function detail(path: string, body: unknown): Promise<ErrorDetail[]> {
  const res = await post(path, body);
  const json = (await res.json()) as { detail: ErrorDetail[] };
  expect(res.status, JSON.stringify(json)).toBe(422);
  return json.detail;
}
const locs = (d: ErrorDetail[]) => d.map((e) => e.loc);
const detailOf = async (res: Response) => ((await res.json()) as { detail: ErrorDetail[] }).detail;

beforeEach(() => {
  service = new FakeTrajectoryService();
  app = createApi({ service });
});

describe('422 on invalid groups, naming the field', () => {
  it.each([
    [
      'a message without content',
      { messages: [[{ role: 'user' }], [{ role: 'user', content: 'x' }]] },
      ['body', 'messages', 0, 0, 'content'],
      'missing',
    ],
    [
      'a message without role',
      { messages: [[{ content: 'x' }], [{ role: 'user', content: 'x' }]] },
      ['body', 'messages', 0, 0, 'role'],
      'missing',
    ],
    ['a non-numeric score', { scores: [1, 'high'] }, ['body', 'scores', 1], 'number_type'],
    ['fewer scores than sequences', { scores: [1] }, ['body', 'scores'], 'value_error'],
    ['fewer mask rows than sequences', { masks: [[1, 2, 3]] }, ['body', 'masks'], 'value_error'],
    [
      'a mask row of the wrong length',
      {
        masks: [
          [1, 2, 3],
          [1, 2],
        ],
      },
      ['body', 'masks', 1],
      'value_error',
    ],
    [
      'an inference_logprobs row of the wrong length',
      { inference_logprobs: [[1, 1, 1], [1]] },
      ['body', 'inference_logprobs', 1],
      'value_error',
    ],
    ['an empty group', { tokens: [], masks: [], scores: [], inference_logprobs: [] }, ['body', 'tokens'], 'value_error'],
    [
      'a non-integer token',
      {
        tokens: [
          [1, 2.5, 3],
          [1, 2, 3],
        ],
      },
      ['body', 'tokens', 0, 1],
      'int_type',
    ],
    ['a missing tokens field', { tokens: undefined }, ['body', 'tokens'], 'missing'],
  ])('rejects %s', async (_, change, loc, type) => {
    const d = await detail('/scored_data', { ...sampleGroup(2, 3), ...change });
    expect(d).toContainEqual({ loc, msg: expect.any(String), type });
    expect(service.queue).toHaveLength(0);
  });

  it('accepts unknown keys, as pydantic ignores them', async () => {
    expect((await post('/scored_data', { ...sampleGroup(), surprise: 1 })).status).toBe(200);
  });

  it('accepts what Atropos accepts though it looks wrong, counting each kind in /metrics and warning', async () => {
    const warnings: string[] = [];
    app = createApi({ service, options: { warn: (line) => warnings.push(line) } });
    const odd = {
      ...sampleGroup(2, 3),
      messages: [[{ role: 'user', content: { text: 'hi', numbers: [1, 2] } }], [{ role: 7, content: 'x', reward: 'high' }]],
      advantages: [[0.5, 0.5, 0.5, 0.5], [0.5]],
      ref_logprobs: [
        [-1, -1, -1],
        [-1, -1, -1],
        [-1, -1, -1],
      ],
    };
    expect(await (await post('/scored_data', odd)).json()).toEqual({ status: 'received' });
    expect(await (await post('/scored_data_list', [odd, { ...sampleGroup(), advantages: [[1], [1]] }])).json()).toMatchObject({
      groups_processed: 2,
    });
    expect(service.queue).toHaveLength(3);
    expect(service.queue[0]!.messages![0]![0]!.content).toEqual({ text: 'hi', numbers: [1, 2] });
    const text = await (await app.request('/metrics')).text();
    for (const [kind, n] of [
      ['message_content_not_text', 2],
      ['message_role_not_text', 2],
      ['advantages_misaligned', 3],
      ['ref_logprobs_misaligned', 2],
    ]) {
      expect(text).toContain(`\nclotho_groups_irregular_total{kind="${kind}"} ${n}\n`);
    }
    // Bools and numeric strings in number fields, as pydantic's lax mode takes them.
    const lax = {
      ...sampleGroup(2, 3),
      tokens: [
        ['5', 6, 7],
        [5, true, 7],
      ],
      scores: [true, ' 0.5 '],
      env_id: null,
    };
    expect((await post('/scored_data', lax)).status).toBe(200);
    expect(service.queue[3]).toMatchObject({
      tokens: [
        [5, 6, 7],
        [5, 1, 7],
      ],
      scores: [1, 0.5],
    });
    expect(
      (
        await post('/scored_data', {
          ...lax,
          tokens: [
            ['5.5', 6, 7],
            [5, 6, 7],
          ],
        })
      ).status,
    ).toBe(422);
    expect(await (await app.request('/metrics')).text()).toContain('\nclotho_groups_irregular_total{kind="numbers_coerced"} 1\n');
    // One line per kind at its first occurrence, not one per group.
    expect(warnings).toHaveLength(5);
    expect(warnings.find((w) => w.includes('advantages_misaligned'))).toMatch(
      /^clotho api: accepted a group with advantages whose rows do not match tokens/,
    );
  });

  it('locates errors inside /scored_data_list by index and ingests nothing', async () => {
    const d = await detail('/scored_data_list', [sampleGroup(), { ...sampleGroup(), scores: [1] }]);
    expect(locs(d)).toEqual([['body', 1, 'scores']]);
    expect(service.queue).toHaveLength(0);
    expect(locs(await detail('/scored_data_list', { tokens: [] }))).toEqual([['body']]);
  });

  it('maps an unknown env_id to 422 on env_id', async () => {
    expect(locs(await detail('/scored_data', sampleGroup(2, 3, { env_id: 7 })))).toEqual([['body', 'env_id']]);
    const d = await detail('/scored_data_list', [sampleGroup(), sampleGroup(2, 3, { env_id: 3 })]);
    expect(d).toEqual([{ loc: ['body', 1, 'env_id'], msg: expect.stringMatching(/unknown env_id 3/), type: 'value_error' }]);
    expect(service.queue).toHaveLength(0);
  });

  it('rejects bad idempotency keys and policy versions', async () => {
    expect(locs(await detail('/scored_data', sampleGroup(2, 3, { idempotency_key: '' })))).toEqual([['body', 'idempotency_key']]);
    expect(locs(await detail('/scored_data', sampleGroup(2, 3, { policy_version: -1 })))).toEqual([['body', 'policy_version']]);
  });
});

describe('422 on other bodies and queries', () => {
  it('answers malformed JSON as FastAPI does', async () => {
    const d = await detail('/scored_data', '{"tokens": [[1,');
    expect(d).toEqual([{ loc: ['body'], msg: expect.stringMatching(/^JSON decode error/), type: 'json_invalid' }]);
  });

  it('requires every registration field', async () => {
    const d = await detail('/register', { wandb_group: 'g' });
    expect(locs(d)).toContainEqual(['body', 'batch_size']);
    expect(d.every((e) => e.type === 'missing')).toBe(true);
    expect(locs(await detail('/register', ''))).toEqual([['body']]);
  });

  it('validates /status-env in the body and the query, and unknown env ids', async () => {
    const asGet = async (path: string, body?: unknown) => {
      const incoming = Readable.from(body === undefined ? [] : [Buffer.from(JSON.stringify(body))]);
      const res = await app.request(path, {}, { incoming });
      expect(res.status).toBe(422);
      return locs(await detailOf(res));
    };
    expect(await asGet('/status-env')).toEqual([['body']]);
    expect(await asGet('/status-env', { env_id: 'x' })).toEqual([['body', 'env_id']]);
    expect(await asGet('/status-env?env_id=abc')).toEqual([['query', 'env_id']]);
    expect(await asGet('/status-env', { env_id: 4 })).toEqual([['body', 'env_id']]);
    expect(await asGet('/status-env?env_id=4')).toEqual([['query', 'env_id']]);
  });

  it('validates lease_seconds', async () => {
    const res = await app.request('/batch?lease_seconds=-3');
    expect(res.status).toBe(422);
    expect(locs(await detailOf(res))).toEqual([['query', 'lease_seconds']]);
  });
});

describe('body limits and gzip errors', () => {
  const limited = () => createApi({ service, options: { maxBodyBytes: 2048 } });

  it('answers 413 to a body over the limit, by Content-Length or by bytes read', async () => {
    const big = JSON.stringify(sampleGroup(8, 100));
    const res = await limited().request('/scored_data', { method: 'POST', body: big });
    expect(res.status).toBe(413);
    const stream = new Blob([big]).stream();
    const streamed = await limited().request('/scored_data', { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    expect(streamed.status).toBe(413);
  });

  it('answers 413 to a gzip body that inflates past the limit', async () => {
    const bomb = gzipSync(Buffer.from(JSON.stringify({ ...sampleGroup(), pad: ' '.repeat(100_000) })));
    expect(bomb.byteLength).toBeLessThan(2048);
    const res = await limited().request('/scored_data', { method: 'POST', body: bomb, headers: { 'Content-Encoding': 'gzip' } });
    expect(res.status).toBe(413);
  });

  it('answers 400 text/plain "Invalid gzip payload" to a body that is not gzip', async () => {
    const res = await post('/scored_data', sampleGroup(), { 'Content-Encoding': 'gzip' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe('Invalid gzip payload');
  });
});

describe('bearer token', () => {
  beforeEach(() => {
    app = createApi({ service, options: { token: 's3cret' } });
  });

  it('answers 401 to every request without the right token', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { Authorization: 'Bearer wrong' },
      { Authorization: 'Basic s3cret' },
      { Authorization: 'Bearer s3cret-longer' },
    ]) {
      for (const path of ['/', '/status', '/metrics', '/reset_data']) {
        const res = await app.request(path, { headers });
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
      }
    }
    expect((await post('/scored_data', sampleGroup())).status).toBe(401);
    expect(service.queue).toHaveLength(0);
  });

  it('lets the right token and CORS preflights through', async () => {
    expect(await (await app.request('/', { headers: { Authorization: 'Bearer s3cret' } })).json()).toEqual({ message: 'AtroposLib API' });
    const preflight = await app.request('/status', {
      method: 'OPTIONS',
      headers: { Origin: 'http://x', 'Access-Control-Request-Method': 'GET' },
    });
    expect(preflight.status).toBe(204);
  });
});

it('answers 500 text/plain when the service fails', async () => {
  service.status = async () => {
    throw new Error('temporal unavailable');
  };
  const quiet = console.error;
  console.error = () => undefined;
  try {
    const res = await app.request('/status');
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('Internal Server Error');
  } finally {
    console.error = quiet;
  }
});
