import { beforeAll, describe, expect, it } from 'vitest';
import { ServerConfigSchema } from '../../config/schemas.js';
import { encodeChat, encodeCompletion, type ScriptedOpenAI } from '../../../test/support/scripted-openai.js';
import { InferenceError } from '../errors.js';
import { loadTokenizer, type Tokenizer } from '../tokenizer.js';
import type { GenerateRequest } from '../types.js';
import { createOpenAIBackend, NO_LOGPROBS_MESSAGE } from './openai.js';
import { scriptedServers } from '../../../test/support/scripted-servers.js';

let qwen: Tokenizer;
beforeAll(async () => {
  qwen = await loadTokenizer('qwen3');
});
const serve = scriptedServers();

const request: GenerateRequest = { messages: [{ role: 'user', content: 'Say hello.' }], n: 1, maxTokens: 32, temperature: 1, topP: 1 };
const backendFor = (server: ScriptedOpenAI, loads: string[] = []) =>
  createOpenAIBackend(
    ServerConfigSchema.parse({ base_url: server.baseUrl, model_name: 'Qwen/Qwen3-0.6B', tokenizer_name: 'qwen3', timeout: 10 }),
    {
      loadTokenizer: async (source) => {
        loads.push(source);
        return qwen;
      },
    },
  );

async function failure(promise: Promise<unknown>): Promise<InferenceError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InferenceError);
  return err as InferenceError;
}

describe('createOpenAIBackend', () => {
  it("keeps the server's token ids and never loads a tokenizer when the server returns them", async () => {
    const loads: string[] = [];
    const [completion] = await backendFor(await serve(), loads).generate(request);
    expect(completion!.tokenIds).toEqual(encodeCompletion('choice 0'));
    expect(completion!.promptTokenIds).toEqual(encodeChat(request.messages as never));
    expect(loads).toEqual([]);
  });

  it('tokenizes locally with tokenizer_name when the server returns no ids, appending EOS on stop', async () => {
    const answer = [...qwen.encode('Hello there!', { addSpecialTokens: false }), qwen.eos!.id];
    const logprobs = answer.map((_, i) => -(i + 1) / 8);
    const server = await serve({ tokenIds: false, responder: () => ({ choices: [{ text: 'Hello there!', tokenIds: answer, logprobs }] }) });
    const loads: string[] = [];
    const [completion] = await backendFor(server, loads).generate(request);
    expect(loads).toEqual(['qwen3']);
    expect(completion).toMatchObject({
      text: 'Hello there!',
      finishReason: 'stop',
      tokenIds: answer,
      logprobs,
      promptTokenIds: qwen.encodeChat(request.messages as never, { addGenerationPrompt: true }),
    });
    expect(qwen.decode(completion!.promptTokenIds!)).toBe('<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n');
  });

  it('fails as MalformedResponse when the logprobs do not line up with the local tokens', async () => {
    const server = await serve({
      tokenIds: false,
      responder: () => ({ choices: [{ text: 'Hello there!', tokenIds: [1, 2], logprobs: [-1, -2] }] }),
    });
    const err = await failure(backendFor(server).generate(request));
    expect(err.type).toBe('MalformedResponse');
    expect(err.message).toMatch(/tokenizer does not match/);
  });

  it('fails non-retryably, naming --openai.server_type, when the server sends no logprobs', async () => {
    const body = {
      id: 'x',
      object: 'chat.completion',
      created: 0,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop', logprobs: null }],
    };
    const server = await serve({ tokenIds: false, responder: () => ({ status: 200, body }) });
    const err = await failure(backendFor(server).generate(request));
    expect(err).toMatchObject({ type: 'InvalidRequest', kind: 'request', message: NO_LOGPROBS_MESSAGE });
    expect(err.message).toContain('--openai.server_type');
  });

  it('continues a prompt given as token ids through /completions, keeping the ids it sent', async () => {
    const server = await serve({ responder: (body) => ({ choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: `t${i}` })) }) });
    const prompt = [5, 6, 7];
    const completions = await backendFor(server).generateTokens!({
      promptTokenIds: prompt,
      n: 2,
      maxTokens: 8,
      temperature: 1,
      topP: 1,
      stop: ['\n'],
    });
    expect(completions.map((c) => [c.text, c.tokenIds, c.promptTokenIds])).toEqual([
      ['t0', encodeCompletion('t0'), prompt],
      ['t1', encodeCompletion('t1'), prompt],
    ]);
    for (const c of completions) expect(c.logprobs).toHaveLength(c.tokenIds!.length);
    const sent = server.requests.at(-1)!;
    expect(sent.path).toBe('/v1/completions');
    expect(sent.body).toMatchObject({ prompt, n: 2, max_tokens: 8, logprobs: 0, return_token_ids: true, stop: ['\n'] });
  });

  it('fails non-retryably when a token-id prompt comes back without token ids', async () => {
    const server = await serve({ tokenIds: false });
    const err = await failure(backendFor(server).generateTokens!({ promptTokenIds: [1, 2], n: 1, maxTokens: 4, temperature: 1, topP: 1 }));
    expect(err.kind).toBe('request');
    expect(err.message).toMatch(/return_token_ids/);
  });

  it('serves a messages-only request from a server that returns neither token ids nor logprobs, tool calls included', async () => {
    const toolCalls = [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":1}' } }];
    const server = await serve({ tokenIds: false, logprobs: false, responder: () => ({ choices: [{ text: '', toolCalls }] }) });
    const loads: string[] = [];
    // A request that needs tokens fails saying what the server lacks and which server type gives them…
    expect((await failure(backendFor(server, loads).generate(request))).message).toBe(NO_LOGPROBS_MESSAGE);
    // …one that needs the messages only gets them, asks for nothing the server may refuse, and loads no tokenizer.
    const [completion] = await backendFor(server, loads).generate({ ...request, messagesOnly: true });
    expect(completion).toMatchObject({
      message: { role: 'assistant', tool_calls: toolCalls },
      tokenIds: null,
      promptTokenIds: null,
      logprobs: null,
    });
    expect(server.requests.at(-1)!.body).not.toHaveProperty('return_token_ids');
    expect(server.requests.at(-1)!.body).not.toHaveProperty('logprobs');
    expect(loads).toEqual([]);
  });

  it('probes health with GET /models and fails the probe when the server is gone', async () => {
    const server = await serve();
    const backend = backendFor(server);
    await backend.checkHealth(AbortSignal.timeout(5000));
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/models']);
    await server.close();
    expect((await failure(backend.checkHealth(AbortSignal.timeout(5000)))).type).toBe('ConnectionError');
  });
});
