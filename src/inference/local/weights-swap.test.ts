import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ServerConfigSchema } from '../../config/schemas.js';
import { createOpenAIBackend } from '../backends/openai.js';
import { createVllmBackend } from '../backends/vllm.js';
import { createOpenAIClient } from '../openai-client.js';
import { WEIGHTS_VERSION_HEADER } from '../weights-version.js';
import { ensureGeneratedModel, MODEL_SPECS, writeGeneratedModel } from './generate-model.js';
import type { GgufValue } from './gguf-writer.js';
import { qwenTokenizerMetadata } from './qwen-tokenizer.js';
import { startLocalEngine, type RunningLocalEngine } from './start.js';

// The real engine on generate:tiny, started at weights version 1 (`clotho inference --weights-version 1`), swapped
// over HTTP to the same shapes with other seeded weights, and back; every file is in its weights folder.
let running: RunningLocalEngine;
let root: string;
let dir: string;
let first: string;
let second: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-weights-'));
  first = join(dir, 'first.gguf');
  [, second] = await Promise.all([
    ensureGeneratedModel(MODEL_SPECS.tiny).then((tiny) => copyFile(tiny, first)),
    ensureGeneratedModel({ ...MODEL_SPECS.tiny, seed: 2 }, dir),
  ]);
  running = await startLocalEngine({ model: first, slots: 4, contextSize: 1024, threads: 1, weightsVersion: 1, weightsDir: dir });
  root = running.baseUrl.replace(/\/v1$/, '');
}, 60_000);
afterAll(async () => {
  await running?.close();
  await rm(dir, { recursive: true, force: true });
});

const call = async (path: string, body?: unknown) => {
  const res = await fetch(`${root}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, version: res.headers.get(WEIGHTS_VERSION_HEADER), body: (await res.json()) as any };
};
const swap = (path: string, version: number) => call('/v1/weights', { path, version });
const prompt = [{ role: 'user', content: 'Name three colours.' }];
/**
 * A greedy chat request: the same weights answer it with the same tokens. (A seeded sample is not as reproducible:
 * a slot that held other tokens before rounds the logits a little differently, and drawing from the random weights'
 * flat distribution over 151k tokens can then land on the next id.)
 */
const sample = async () => {
  const r = await call('/v1/chat/completions', { messages: prompt, max_tokens: 12, temperature: 0, return_token_ids: true });
  expect(r.status).toBe(200);
  return { version: r.version, ids: r.body.choices.map((c: any) => c.token_ids) };
};
/** What every face of the server says is served. */
const served = async () => ({
  weights: (await call('/v1/weights')).body,
  health: (await call('/health')).body.weights_version,
  models: (await call('/v1/models')).body.data.map((m: any) => m.weights_version),
});

/** The weights version Clotho's clients read off each of their routes: chat, `/v1/completions`, `/generate`. */
const clientsRead = async () => {
  const config = (server_type: 'openai' | 'vllm') =>
    ServerConfigSchema.parse({ base_url: running.baseUrl, model_name: running.modelName, server_type });
  const sampling = { n: 1, maxTokens: 2, temperature: 1, topP: 1 };
  const promptTokenIds = running.engine.tokenize('Hello');
  const chat = await createOpenAIClient(config('openai')).generate({ messages: prompt, ...sampling });
  const completions = await createOpenAIBackend(config('openai')).generateTokens!({ promptTokenIds, ...sampling });
  const generate = await createVllmBackend(config('vllm')).generateTokens({ promptTokenIds, ...sampling });
  return [chat, completions, generate].map((c) => c[0]!.weightsVersion);
};

describe('swapping weights on a running engine (POST /v1/weights)', () => {
  // Each test starts from the weights the one before left.
  let before: Awaited<ReturnType<typeof sample>>;

  it('reports the version it started with on every face, and on every generation', async () => {
    expect(await served()).toEqual({ weights: { version: 1, path: first }, health: 1, models: [1] });
    before = await sample();
    expect(before.version).toBe('1');
    const tokens = running.engine.tokenize('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    const completion = await call('/v1/completions', { prompt: tokens, max_tokens: 2 });
    expect(completion.version).toBe('1');
    const generated = await call('/generate', { prompt: { prompt_token_ids: tokens }, max_tokens: 2 });
    expect([generated.version, generated.body.weights_version]).toEqual(['1', 1]);
    expect(await clientsRead()).toEqual([1, 1, 1]);
  });

  it('refuses bad bodies, missing files, non-GGUF files, older versions and another vocabulary, and keeps serving', async () => {
    const refused = async (body: unknown, status: number, param: string | null, message?: RegExp) => {
      const r = await call('/v1/weights', body);
      expect([r.status, r.body.error.param], JSON.stringify(r.body)).toEqual([status, param]);
      if (message) expect(r.body.error.message).toMatch(message);
    };
    await refused({ path: second, version: -1 }, 400, 'version');
    await refused({ path: second, version: 2.5 }, 400, 'version');
    await refused({ path: second }, 400, 'version');
    await refused({ version: 2 }, 400, 'path');
    await refused({ path: second, version: 2, force: true }, 400, null, /force/);
    await refused('{"path":', 400, null, /not valid JSON/);
    // Nothing there: the answer every path outside the weights folder gets (src/inference/local/server.test.ts).
    await refused({ path: join(dir, 'missing.gguf'), version: 2 }, 403, 'path', /--weights-dir/);
    await writeFile(join(dir, 'notes.gguf'), 'not weights');
    await refused({ path: join(dir, 'notes.gguf'), version: 2 }, 400, 'path', /is not a GGUF file/);
    // A file still being written: its header reads, its tensors are cut off.
    const bytes = await readFile(second);
    await writeFile(join(dir, 'cut.gguf'), bytes.subarray(0, 20_000_000));
    await refused({ path: join(dir, 'cut.gguf'), version: 2 }, 400, 'path', /is cut short: its tensors need \d+ more bytes/);
    // A whole file whose metadata says 32 dimensions where its tensors have 64: llama.cpp refuses to load it (and the
    // engine still closes afterwards).
    const patched = Buffer.from(bytes);
    const key = Buffer.from('qwen2.embedding_length');
    patched.writeUInt32LE(32, patched.indexOf(key) + key.length + 4);
    await writeFile(join(dir, 'misshapen.gguf'), patched);
    await refused({ path: join(dir, 'misshapen.gguf'), version: 2 }, 400, 'path', /is not a loadable GGUF/);
    await refused({ path: second, version: 0 }, 409, 'version', /version 0 is older than version 1/);
    // The same shapes and seed as the second file, one token renamed: another vocabulary.
    const tokenizer = qwenTokenizerMetadata().map(([key, value]): [string, GgufValue] =>
      key === 'tokenizer.ggml.tokens' && value.type === 'string[]'
        ? [key, { type: 'string[]', value: value.value.map((t, i) => (i === 1000 ? `${t}_renamed` : t)) }]
        : [key, value],
    );
    await writeGeneratedModel(join(dir, 'renamed.gguf'), { ...MODEL_SPECS.tiny, seed: 2 }, tokenizer);
    await refused({ path: join(dir, 'renamed.gguf'), version: 2 }, 409, 'path', /tokenizer\.ggml\.tokens\[1000\] is ".*_renamed"/);

    expect(await served()).toEqual({ weights: { version: 1, path: first }, health: 1, models: [1] });
    expect(await sample()).toEqual(before);
  }, 60_000);

  it('serves the new weights to new requests at once, while a request in flight finishes on the old ones', async () => {
    // Long enough (about 2 s) to be running while the swap loads (about 1 s).
    const long = { prompt: 'Once upon a time', max_tokens: 900, temperature: 0, return_token_ids: true };
    const alone = await call('/v1/completions', long);
    const inFlight = call('/v1/completions', long).then((r) => ({ ...r, at: performance.now() }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const swapped = await swap(second, 2);
    const swappedAt = performance.now();
    expect(swapped.status).toBe(200);
    expect(swapped.body).toEqual({ version: 2, path: second, load_ms: expect.any(Number) });
    expect(swapped.body.load_ms).toBeGreaterThan(0);
    console.log(`swap of generate:tiny: load_ms ${swapped.body.load_ms}`);

    expect(await served()).toEqual({ weights: { version: 2, path: second }, health: 2, models: [2] });
    const after = await sample();
    expect(after.version).toBe('2');
    expect(after.ids).not.toEqual(before.ids);

    expect(running.engine.loadedWeights).toBe(2);
    const old = await inFlight;
    expect(old.at).toBeGreaterThan(swappedAt);
    expect([old.status, old.version]).toEqual([200, '1']);
    expect(old.body.choices[0].token_ids).toEqual(alone.body.choices[0].token_ids);
    // The old weights are freed once their last request is done.
    await vi.waitFor(() => expect(running.engine.loadedWeights).toBe(1));
  }, 60_000);

  it('answers a repeated swap 200 without loading, and refuses the served version from another file', async () => {
    for (const path of [second, relative(dir, second)]) {
      const again = await swap(path, 2);
      expect([again.status, again.body]).toEqual([200, { version: 2, path: second, load_ms: 0 }]);
    }
    const copy = join(dir, 'copy.gguf');
    await copyFile(second, copy);
    const other = await swap(copy, 2);
    expect([other.status, other.body.error.param]).toEqual([409, 'version']);
    expect(other.body.error.message).toMatch(/version 2 is served from .*, not .*copy\.gguf/);
    expect((await call('/v1/weights')).body).toEqual({ version: 2, path: second });

    // Back to the first file as version 3: its answers are the first answers again.
    expect((await swap(first, 3)).status).toBe(200);
    expect(await sample()).toEqual({ ...before, version: '3' });
    await vi.waitFor(() => expect(running.engine.loadedWeights).toBe(1));
    expect(await clientsRead()).toEqual([3, 3, 3]);
  }, 60_000);
});
