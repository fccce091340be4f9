import { copyFile, mkdir, symlink, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureGeneratedModel, MODEL_SPECS } from '../../src/inference/local/generate-model.js';
import { spawnClotho, waitFor, type CliRun } from '../support/cli.js';
import { useScratch } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';

/**
 * Issue 38, finding 8: one listening policy for `clotho inference` and `clotho proxy` (and `clotho api`, whose tests
 * are in src/cli/commands/api.test.ts), run as a user runs them: a host other than loopback is refused without a
 * token or --trusted-network; with a token every request but GET /health needs it, and a 401 names the header.
 * `clotho inference` swaps weights only from its --weights-dir, with one refusal whatever the path is.
 */

const scratch = useScratch('clotho-listening-');
const started: CliRun[] = [];
let model: string;
beforeAll(async () => {
  model = await ensureGeneratedModel(MODEL_SPECS.tiny);
}, 120_000);
afterAll(() => {
  for (const run of started) if (run.child.exitCode === null) run.child.kill('SIGKILL');
});

/** Starts `clotho <args>`; resolves with its exit code if it exits, or with the port it serves on. */
async function start(args: string[], env: Record<string, string> = {}): Promise<{ run: CliRun; port?: number; code?: number | string }> {
  const run = spawnClotho(args, { CLOTHO_TRUSTED_NETWORK: '', CLOTHO_INFERENCE_TOKEN: '', CLOTHO_PROXY_TOKEN: '', ...env });
  started.push(run);
  let port: number | undefined;
  let code: number | string | undefined;
  void run.exited.then((c) => (code = c));
  await waitFor(
    () => {
      port = Number(/http:\/\/[^\s/]+:(\d+)/.exec(run.stdout())?.[1]) || undefined;
      return port !== undefined || code !== undefined;
    },
    120_000,
    `clotho ${args[0]} to listen or exit`,
  );
  return { run, ...(port === undefined ? {} : { port }), ...(code === undefined ? {} : { code }) };
}

const stop = async (run: CliRun) => {
  run.child.kill('SIGTERM');
  await run.exited;
};

const fetchJson = async (port: number, path: string, init: RequestInit = {}) => {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, init);
  return { status: response.status, body: (await response.json()) as any };
};

describe('clotho inference', () => {
  it('refuses a host other than loopback without --token or --trusted-network, naming both', async () => {
    const r = await start(['inference', '--model', model, '--host', '0.0.0.0', '--port', '0']);
    if (r.port !== undefined) await stop(r.run);
    expect(r.code, `it served on port ${r.port}`).toBe(2);
    expect(r.run.stderr()).toMatch(/--token \(or CLOTHO_INFERENCE_TOKEN\).*--trusted-network/s);
  });

  it('with --token, answers 401 naming the header to a request without it, except GET /health', async () => {
    const r = await start(['inference', '--model', model, '--host', '0.0.0.0', '--port', '0', '--token', 's3cret']);
    expect(r.port, r.run.stderr()).toBeDefined();
    const denied = await fetchJson(r.port!, '/v1/models');
    expect(denied.status).toBe(401);
    expect(denied.body.error.message).toContain('Authorization: Bearer');
    expect((await fetchJson(r.port!, '/v1/models', { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetchJson(r.port!, '/v1/models', { headers: { Authorization: 'Bearer s3cret' } })).status).toBe(200);
    expect((await fetchJson(r.port!, '/health')).status).toBe(200);
    const swap = await fetchJson(r.port!, '/v1/weights', { method: 'POST', body: JSON.stringify({ path: model, version: 1 }) });
    expect(swap.status).toBe(401);
    await stop(r.run);
  });

  it('with --trusted-network, serves a host other than loopback without a token, warning on start', async () => {
    for (const env of [{}, { CLOTHO_TRUSTED_NETWORK: '1' }] as Record<string, string>[]) {
      const args = ['inference', '--model', model, '--host', '0.0.0.0', '--port', '0'];
      const r = await start(Object.keys(env).length ? args : [...args, '--trusted-network'], env);
      expect(r.port, r.run.stderr()).toBeDefined();
      expect(r.run.stderr()).toContain('warning: --trusted-network');
      expect((await fetchJson(r.port!, '/v1/models')).status).toBe(200);
      await stop(r.run);
    }
  });

  it('takes weights only from --weights-dir, with one answer for every path it refuses', async () => {
    const weights = scratch.path('weights');
    await mkdir(weights);
    const inside = scratch.path('weights', 'step-1.gguf');
    await copyFile(model, inside);
    await writeFile(scratch.path('outside.txt'), 'not weights');
    await symlink(model, scratch.path('weights', 'link-out.gguf'));
    const r = await start(['inference', '--model', model, '--port', '0', '--weights-dir', weights]);
    expect(r.port, r.run.stderr()).toBeDefined();
    const swap = (path: string, version: number) =>
      fetchJson(r.port!, '/v1/weights', { method: 'POST', body: JSON.stringify({ path, version }) });
    const refusals = await Promise.all(
      [
        model, // a real GGUF outside the folder
        scratch.path('outside.txt'), // a file outside that is not a GGUF
        scratch.path('nowhere.gguf'), // nothing at all
        scratch.path('weights', 'missing.gguf'), // nothing, inside
        scratch.path('weights', 'link-out.gguf'), // a link inside to a file outside
        scratch.path('weights', '..', 'outside.txt'), // out through ..
        '/etc/passwd',
        weights, // the folder itself
      ].map((path) => swap(path, 5)),
    );
    const [first] = refusals;
    expect(first!.status).toBe(403);
    expect(first!.body.error.message).toContain('--weights-dir');
    for (const refusal of refusals) expect(refusal).toEqual(first);
    // A file inside the folder, by its path or relative to the folder, is swapped in.
    expect(await swap(inside, 1)).toEqual({ status: 200, body: { version: 1, path: inside, load_ms: expect.any(Number) } });
    expect((await swap('step-1.gguf', 1)).body).toEqual({ version: 1, path: inside, load_ms: 0 });
    await stop(r.run);
  }, 60_000);

  it('refuses every swap without --weights-dir, saying how to allow them', async () => {
    const r = await start(['inference', '--model', model, '--port', '0']);
    expect(r.port, r.run.stderr()).toBeDefined();
    const swap = await fetchJson(r.port!, '/v1/weights', { method: 'POST', body: JSON.stringify({ path: model, version: 1 }) });
    expect(swap.status).toBe(403);
    expect(swap.body.error.message).toContain('--weights-dir');
    expect((await fetchJson(r.port!, '/v1/weights')).body.version).toBe(0);
    await stop(r.run);
  });
});

describe('clotho proxy', () => {
  const config = async () => {
    const upstream = scratch.closeAfter(await startScriptedOpenAI({}));
    const path = scratch.path('proxy.json');
    await writeFile(path, JSON.stringify({ model_name: 'm', tokenizer_name: 'qwen3', servers: [{ base_url: upstream.baseUrl }] }));
    return path;
  };

  it('refuses a host other than loopback without --token or --trusted-network, naming both', async () => {
    const r = await start(['proxy', '--config', await config(), '--host', '0.0.0.0', '--port', '0']);
    if (r.port !== undefined) await stop(r.run);
    expect(r.code, `it served on port ${r.port}`).toBe(2);
    expect(r.run.stderr()).toMatch(/--token \(or CLOTHO_PROXY_TOKEN\).*--trusted-network/s);
  });

  it('with a token (CLOTHO_PROXY_TOKEN), answers 401 naming the header to a request without it, except GET /health', async () => {
    const r = await start(['proxy', '--config', await config(), '--host', '0.0.0.0', '--port', '0'], { CLOTHO_PROXY_TOKEN: 'pt' });
    expect(r.port, r.run.stderr()).toBeDefined();
    const denied = await fetchJson(r.port!, '/sessions/create', { method: 'POST', body: '{}' });
    expect(denied.status).toBe(401);
    expect(denied.body.error.message).toContain('Authorization: Bearer');
    const created = await fetchJson(r.port!, '/sessions/create', { method: 'POST', body: '{}', headers: { Authorization: 'Bearer pt' } });
    expect(created.status).toBe(200);
    expect((await fetchJson(r.port!, '/health')).status).toBe(200);
    await stop(r.run);
  });

  it('with --trusted-network, serves without a token, warning on start', async () => {
    const r = await start(['proxy', '--config', await config(), '--host', '0.0.0.0', '--port', '0', '--trusted-network']);
    expect(r.port, r.run.stderr()).toBeDefined();
    expect(r.run.stderr()).toContain('warning: --trusted-network');
    expect((await fetchJson(r.port!, '/sessions/create', { method: 'POST', body: '{}' })).status).toBe(200);
    await stop(r.run);
  });
});
