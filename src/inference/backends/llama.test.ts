import { afterEach, describe, expect, it } from 'vitest';
import { ServerConfigSchema } from '../../config/schemas.js';
import { llamaTemplate, llamaTokenize, scriptedSample, startLlamaServer, type NativeServer } from '../../../test/support/native-servers.js';
import { defaultLogprob } from '../../../test/support/scripted-openai.js';
import type { GenerateRequest } from '../types.js';
import { createLlamaBackend } from './llama.js';

const servers: NativeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function serve(): Promise<NativeServer> {
  const server = await startLlamaServer();
  servers.push(server);
  return server;
}
const backendFor = (server: NativeServer) =>
  createLlamaBackend(ServerConfigSchema.parse({ base_url: server.url, server_type: 'llama', timeout: 10 }));
const request: GenerateRequest = { messages: [{ role: 'user', content: 'Hi' }], n: 2, maxTokens: 64, temperature: 0.5, topP: 0.9, seed: 7 };

describe('createLlamaBackend', () => {
  it('renders and tokenizes on the server, then samples each completion with n_probs', async () => {
    const server = await serve();
    const completions = await backendFor(server).generate(request);
    const prompt = llamaTemplate(request.messages);
    const ids = llamaTokenize(prompt);
    expect(server.requests.slice(0, 2)).toEqual([
      expect.objectContaining({ path: '/apply-template', body: { messages: request.messages } }),
      expect.objectContaining({ path: '/tokenize', body: { content: prompt, add_special: false, parse_special: true } }),
    ]);
    const sampled = server.requests
      .slice(2)
      .map((r) => r.body as Record<string, unknown>)
      .sort((a, b) => Number(a.seed) - Number(b.seed));
    expect(sampled).toEqual(
      [7, 8].map((seed) => ({
        prompt: ids,
        n_predict: 64,
        temperature: 0.5,
        top_p: 0.9,
        n_probs: 1,
        return_tokens: true,
        cache_prompt: true,
        seed,
      })),
    );
    // The stand-in answers request i with `sample i`, in arrival order.
    expect(completions.map((c) => c.text).sort()).toEqual(['sample 0', 'sample 1']);
    for (const c of completions) {
      const s = scriptedSample(Number(c.text.slice(-1)), 64);
      expect(c).toEqual({
        text: s.text,
        message: { role: 'assistant', content: s.text },
        finishReason: 'stop',
        promptTokenIds: ids,
        tokenIds: s.tokenIds,
        logprobs: s.tokenIds.map(defaultLogprob),
      });
    }
  });

  it('asks the template for thinking (chat_template_kwargs.enable_thinking) when reasoning is asked for', async () => {
    const server = await serve();
    await backendFor(server).generate({ ...request, n: 1, reasoning: { effort: 'low' } });
    expect(server.requests[0]).toMatchObject({
      path: '/apply-template',
      body: { messages: request.messages, chat_template_kwargs: { enable_thinking: true } },
    });
  });

  it('maps stop_type limit to a length finish', async () => {
    const [completion] = await backendFor(await serve()).generateTokens({
      promptTokenIds: [1, 2],
      n: 1,
      maxTokens: 4,
      temperature: 1,
      topP: 1,
    });
    expect(completion).toMatchObject({ finishReason: 'length', tokenIds: [115, 97, 109, 112], text: 'samp' });
  });

  it('checks health with GET /health, which answers 503 while the model loads', async () => {
    const server = await serve();
    const backend = backendFor(server);
    await backend.checkHealth(AbortSignal.timeout(5000));
    server.healthy = false;
    await expect(backend.checkHealth(AbortSignal.timeout(5000))).rejects.toMatchObject({ type: 'ServerError', message: 'Loading model' });
  });
});
