import { afterAll, beforeAll, inject } from 'vitest';
import { mkdtemp } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../temporal-dev/index.js';
import { spawnClotho, waitFor, type CliRun } from './cli.js';
import { uniqueId } from './temporal.js';

/** A `clotho api` process of a test's own (its own batcher id and store), restartable after a kill. */
export interface ApiProcess {
  url: string;
  batcherId: string;
  /** The trajectory store (a directory or an s3:// URL); processes feeding this API must share it. */
  store: string;
  run: CliRun;
  /** Starts the process again with the same port, batcher and store (after a kill); `env` replaces the first start's. */
  restart(env?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

export async function startApiProcess(options: {
  temporalAddress: string;
  args?: string[];
  /** `--store` (default: a fresh temporary directory). */
  store?: string;
  env?: Record<string, string>;
  /** The command that serves it: `clotho api`, or `clotho run-api` as tools that start Atropos's server by name. @default 'api' */
  command?: 'api' | 'run-api';
}): Promise<ApiProcess> {
  const port = await freePort();
  const batcherId = uniqueId('batcher');
  const store = options.store ?? (await mkdtemp(join(tmpdir(), 'clotho-api-store-')));
  const args = [options.command ?? 'api', '--port', String(port), '--batcher-id', batcherId, '--store', store, ...(options.args ?? [])];
  const launch = async (extra = options.env) => {
    const run = spawnClotho(args, { ...extra, TEMPORAL_ADDRESS: options.temporalAddress });
    await waitFor(() => run.stdout().includes('listening on') || run.child.exitCode !== null, 90_000, 'clotho api to listen');
    if (run.child.exitCode !== null) throw new Error(`clotho api exited: ${run.stderr()}`);
    return run;
  };
  const api: ApiProcess = {
    url: `http://127.0.0.1:${port}`,
    batcherId,
    store,
    run: await launch(),
    async restart(env) {
      api.run = await launch(env);
    },
    async stop() {
      if (api.run.child.exitCode === null && api.run.child.signalCode === null) {
        api.run.child.kill('SIGTERM');
        await api.run.exited;
      }
    },
  };
  return api;
}

/** A small JSON client for the API under test. */
export function apiClient(base: string) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body:
        body === undefined ? undefined : typeof body === 'string' || body instanceof Uint8Array ? (body as string) : JSON.stringify(body),
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, text, json: json as any };
  };
  /** A GET with a JSON body, as Atropos's environments send `/status-env` (fetch refuses to). */
  const getWithBody = (path: string, body: unknown) =>
    new Promise<{ status: number; json: any }>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = request(
        `${base}${path}`,
        { method: 'GET', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return {
    get: (path: string) => call('GET', path),
    getWithBody,
    post: (path: string, body: unknown, headers?: Record<string, string>) => call('POST', path, body, headers),
    call,
  };
}

/** The trainer's registration as Atropos's example trainer sends it. */
export const TRAINER = {
  wandb_group: 'g',
  wandb_project: 'p',
  batch_size: 4,
  max_token_len: 2048,
  checkpoint_dir: 'ckpt',
  save_checkpoint_interval: 10,
  starting_step: 0,
  num_steps: 100,
};

/** A valid group of `size` sequences, tagged by its first token. */
export function group(tag: number, size = 2, envId: number | null = 0) {
  const tokens = Array.from({ length: size }, (_, i) => [tag, 100 + i, 200 + i]);
  return {
    tokens,
    masks: tokens.map((t) => [-100, ...t.slice(1)]),
    scores: tokens.map((_, i) => (i % 2 === 0 ? 1 : -1)),
    env_id: envId,
  };
}

/**
 * One `clotho api` process (with `args`) for a test file's or a describe block's tests, started before them and stopped after; read `api` and `http`
 * inside the tests.
 */
export function sharedApiProcess(args: string[] = []): { api: ApiProcess; http: ReturnType<typeof apiClient> } {
  const shared = {} as { api: ApiProcess; http: ReturnType<typeof apiClient> };
  beforeAll(async () => {
    shared.api = await startApiProcess({ temporalAddress: inject('temporalAddress'), args });
    shared.http = apiClient(shared.api.url);
  });
  afterAll(() => shared.api?.stop());
  return shared;
}
