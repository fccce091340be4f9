import { afterEach, describe, expect, it } from 'vitest';
import { ServerConfigSchema } from '../../config/schemas.js';
import {
  scriptedSample,
  startVllmServer,
  teacherTop,
  type NativeServer,
  type NativeServerOptions,
} from '../../../test/support/native-servers.js';
import { defaultLogprob } from '../../../test/support/scripted-openai.js';
import { InferenceError } from '../errors.js';
import { createVllmBackend } from './vllm.js';

const servers: NativeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function serve(options?: NativeServerOptions): Promise<NativeServer> {
  const server = await startVllmServer(options);
  servers.push(server);
  return server;
}
// base_url ends in /v1 as for the OpenAI server; native endpoints live at the root.
const backendFor = (server: NativeServer) =>
  createVllmBackend(
    ServerConfigSchema.parse({ base_url: `${server.url}/v1`, server_type: 'vllm', model_name: 'm', api_key: 'k', timeout: 10 }),
  );

describe('createVllmBackend', () => {
  it('continues a token-id prompt through the native /generate endpoint', async () => {
    const server = await serve();
    const prompt = [5, 6, 7];
    const completions = await backendFor(server).generateTokens({
      promptTokenIds: prompt,
      n: 2,
      maxTokens: 64,
      temperature: 0.7,
      topP: 0.9,
      seed: 3,
    });
    expect(server.requests).toEqual([
      expect.objectContaining({
        path: '/generate',
        body: { prompt: { prompt_token_ids: prompt }, logprobs: 0, n: 2, max_tokens: 64, temperature: 0.7, top_p: 0.9, seed: 3 },
      }),
    ]);
    expect(completions).toEqual(
      [0, 1].map((i) => {
        const s = scriptedSample(i, 64);
        return {
          text: `sample ${i}`,
          message: { role: 'assistant', content: `sample ${i}` },
          finishReason: 'stop',
          promptTokenIds: prompt,
          tokenIds: s.tokenIds,
          logprobs: s.tokenIds.map(defaultLogprob),
        };
      }),
    );
  });

  it('reports a length finish when max_tokens cuts the sample', async () => {
    const [completion] = await backendFor(await serve()).generateTokens({
      promptTokenIds: [5],
      n: 1,
      maxTokens: 3,
      temperature: 1,
      topP: 1,
    });
    expect(completion).toMatchObject({ finishReason: 'length', text: 'sam', tokenIds: [115, 97, 109] });
  });

  it("returns a teacher's top-k prompt logprobs per position, the first empty, the own token dropped", async () => {
    const server = await serve();
    const tokens = [40, 41, 42];
    const result = await backendFor(server).promptLogprobs(tokens, 2);
    expect(server.requests[0]).toMatchObject({
      path: '/v1/completions',
      body: { model: 'm', prompt: tokens, max_tokens: 1, temperature: 0, prompt_logprobs: 2 },
    });
    expect(result.tokenIds).toEqual([[], teacherTop(1, 2).map((t) => t.id), teacherTop(2, 2).map((t) => t.id)]);
    expect(result.logprobs).toEqual([[], [-0.125, -0.25], [-0.125, -0.25]]);
  });

  it("with top_k 0 returns only each position's own token", async () => {
    const result = await backendFor(await serve()).promptLogprobs([40, 41, 42], 0);
    expect(result).toEqual({ tokenIds: [[], [41], [42]], logprobs: [[], [defaultLogprob(41)], [defaultLogprob(42)]] });
  });

  it('checks health with GET /health at the root', async () => {
    const server = await serve();
    const backend = backendFor(server);
    await backend.checkHealth(AbortSignal.timeout(5000));
    server.healthy = false;
    const err = await backend.checkHealth(AbortSignal.timeout(5000)).catch((e: unknown) => e);
    expect(err).toMatchObject({ type: 'ServerError', status: 503 });
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /health', 'GET /health']);
  });

  it('fails as MalformedResponse on a body that is not the /generate format', async () => {
    const server = await serve({ fault: () => ({ raw: '{"text": ["a"], "finish_reasons": ["stop"]}' }) });
    const err = await backendFor(server)
      .generateTokens({ promptTokenIds: [5], n: 1, maxTokens: 8, temperature: 1, topP: 1 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InferenceError);
    expect(err).toMatchObject({ type: 'MalformedResponse' });
  });
});
