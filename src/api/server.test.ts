import { request } from 'node:http';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApi } from './app.js';
import { FakeTrajectoryService, sampleGroup } from '../../test/support/fake-trajectory-service.js';
import { startApiServer, type RunningApiServer } from './server.js';

const service = new FakeTrajectoryService();
let server: RunningApiServer;

/** A raw HTTP exchange: node:http, unlike fetch, sends a body on a GET, as aiohttp does. */
function exchange(method: string, path: string, body?: Buffer, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      { method, headers: { ...headers, ...(body ? { 'Content-Length': body.byteLength } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  server = await startApiServer({ app: createApi({ service }), host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await server?.close();
});

it('serves the API over a real socket on a free port', async () => {
  expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(await (await fetch(`${server.url}/`)).json()).toEqual({ message: 'AtroposLib API' });
  const registration = {
    wandb_group: '',
    wandb_project: '',
    batch_size: 2,
    max_token_len: 64,
    checkpoint_dir: 'c',
    save_checkpoint_interval: 1,
    starting_step: 0,
    num_steps: 3,
  };
  const reg = await exchange('POST', '/register', Buffer.from(JSON.stringify(registration)), { 'Content-Type': 'application/json' });
  expect(reg.body.toString()).toMatch(/^\{"uuid":\d{20,39}\}$/);
  await fetch(`${server.url}/batch`);
  const env = { max_token_length: 64, desired_name: 'e', weight: 1, group_size: 2 };
  const registered = await fetch(`${server.url}/register-env`, { method: 'POST', body: JSON.stringify(env) });
  expect(await registered.json()).toMatchObject({ status: 'success', env_id: 0 });
});

it('reads the JSON body of GET /status-env and gzip bodies from the socket', async () => {
  const gz = gzipSync(Buffer.from(JSON.stringify(sampleGroup(2, 300, { env_id: 0 }))));
  const posted = await exchange('POST', '/scored_data', gz, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
  expect(JSON.parse(posted.body.toString())).toEqual({ status: 'received' });
  const status = await exchange('GET', '/status-env', Buffer.from('{"env_id": 0}'), { 'Content-Type': 'application/json' });
  expect(status.status).toBe(200);
  expect(JSON.parse(status.body.toString())).toMatchObject({ self_queue_size: 1, max_group_size: 2 });
  expect(await (await fetch(`${server.url}/status-env?env_id=0`)).json()).toEqual(JSON.parse(status.body.toString()));
});

it('gzips large responses on the wire', async () => {
  const res = await exchange('GET', '/latest_example', undefined, { 'Accept-Encoding': 'gzip' });
  expect(res.headers['content-encoding']).toBe('gzip');
  expect(JSON.parse(gunzipSync(res.body).toString()).tokens[0]).toHaveLength(300);
});
