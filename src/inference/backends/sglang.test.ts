import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ServerConfigSchema } from '../../config/schemas.js';
import { scriptedSample, startSglangServer, type NativeServer } from '../../../test/support/native-servers.js';
import { defaultLogprob } from '../../../test/support/scripted-openai.js';
import { loadTokenizer, type Tokenizer } from '../tokenizer.js';
import type { GenerateRequest } from '../types.js';
import { createSglangBackend } from './sglang.js';

let qwen: Tokenizer;
beforeAll(async () => {
  qwen = await loadTokenizer('qwen3');
});
const servers: NativeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function serve(): Promise<NativeServer> {
  const server = await startSglangServer();
  servers.push(server);
  return server;
}
const backendFor = (server: NativeServer, loads: string[] = []) =>
  createSglangBackend(ServerConfigSchema.parse({ base_url: `${server.url}/v1`, server_type: 'sglang', model_name: 'qwen3', timeout: 10 }), {
    loadTokenizer: async (source) => {
      loads.push(source);
      return qwen;
    },
  });
const request: GenerateRequest = {
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
  ],
  n: 3,
  maxTokens: 64,
  temperature: 0.8,
  topP: 0.95,
  stop: ['</answer>'],
  seed: 11,
};

describe('createSglangBackend', () => {
  it('renders the chat with the model tokenizer and samples through native /generate', async () => {
    const server = await serve();
    const loads: string[] = [];
    const completions = await backendFor(server, loads).generate(request);
    const inputIds = qwen.encodeChat(request.messages as never, { addGenerationPrompt: true });
    // tokenizer_name "none" falls back to model_name.
    expect(loads).toEqual(['qwen3']);
    expect(server.requests).toEqual([
      expect.objectContaining({
        path: '/generate',
        body: {
          input_ids: inputIds,
          sampling_params: { max_new_tokens: 64, temperature: 0.8, top_p: 0.95, n: 3, stop: ['</answer>'], sampling_seed: 11 },
          return_logprob: true,
          return_text_in_logprobs: false,
        },
      }),
    ]);
    expect(completions).toEqual(
      [0, 1, 2].map((i) => {
        const s = scriptedSample(i, 64);
        return {
          text: `sample ${i}`,
          message: { role: 'assistant', content: `sample ${i}` },
          finishReason: 'stop',
          promptTokenIds: inputIds,
          tokenIds: s.tokenIds,
          logprobs: s.tokenIds.map(defaultLogprob),
        };
      }),
    );
  });

  it('reads a single-object answer (n = 1) and a length finish', async () => {
    const [completion] = await backendFor(await serve()).generateTokens({
      promptTokenIds: [9, 9],
      n: 1,
      maxTokens: 2,
      temperature: 1,
      topP: 1,
    });
    expect(completion).toMatchObject({
      finishReason: 'length',
      tokenIds: [115, 97],
      promptTokenIds: [9, 9],
      logprobs: [defaultLogprob(115), defaultLogprob(97)],
    });
  });

  it('checks health with GET /health', async () => {
    const server = await serve();
    const backend = backendFor(server);
    await backend.checkHealth(AbortSignal.timeout(5000));
    server.healthy = false;
    await expect(backend.checkHealth(AbortSignal.timeout(5000))).rejects.toMatchObject({ type: 'ServerError', status: 503 });
  });
});
