import { describe, expect, it, vi } from 'vitest';
import { ServerConfigSchema } from '../config/schemas.js';
import type { Message } from '../schema/scored-data.js';
import {
  defaultLogprob,
  encodeChat,
  encodeCompletion,
  startScriptedOpenAI,
  type ScriptedOpenAI,
} from '../../test/support/scripted-openai.js';
import { InferenceError } from './errors.js';
import {
  buildTrainingSequence,
  continueTrainingSequence,
  createOpenAIClient,
  extendTrainingSequence,
  requestBody,
  TokenizationDriftError,
} from './openai-client.js';
import type { GenerateRequest } from './types.js';
import { scriptedServers } from '../../test/support/scripted-servers.js';

const serve = scriptedServers();

function clientFor(server: ScriptedOpenAI, config: { timeout?: number } = {}, progressIntervalMs?: number) {
  const parsed = ServerConfigSchema.parse({ base_url: server.baseUrl, model_name: 'test-model', timeout: 30, ...config });
  return createOpenAIClient(parsed, progressIntervalMs === undefined ? {} : { progressIntervalMs });
}

const messages: Message[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'What is 2+2?' },
];
const request = (overrides: Partial<GenerateRequest> = {}): GenerateRequest => ({
  messages,
  n: 1,
  maxTokens: 32,
  temperature: 1,
  topP: 1,
  ...overrides,
});

/** The InferenceError a call rejects with. */
async function failure(promise: Promise<unknown>): Promise<InferenceError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InferenceError);
  return err as InferenceError;
}

describe('createOpenAIClient', () => {
  it('returns n completions with prompt ids, token ids and logprobs', async () => {
    const server = await serve();
    const completions = await clientFor(server).generate(request({ n: 3 }));
    expect(completions).toEqual(
      [0, 1, 2].map((i) => {
        const tokenIds = encodeCompletion(`choice ${i}`);
        return {
          text: `choice ${i}`,
          message: { role: 'assistant', content: `choice ${i}` },
          finishReason: 'stop',
          promptTokenIds: encodeChat(messages),
          tokenIds,
          logprobs: tokenIds.map(defaultLogprob),
        };
      }),
    );
  });

  it('sends the sampling parameters and asks for token ids and logprobs', async () => {
    const server = await serve();
    const tools = [{ type: 'function', function: { name: 'add', parameters: { type: 'object' } } }];
    await clientFor(server).generate(request({ n: 2, maxTokens: 64, temperature: 0.7, topP: 0.9, stop: ['\n\n'], seed: 42, tools }));
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ method: 'POST', path: '/v1/chat/completions' });
    expect(server.requests[0]!.body).toMatchObject({
      model: 'test-model',
      messages,
      n: 2,
      max_tokens: 64,
      temperature: 0.7,
      top_p: 0.9,
      stop: ['\n\n'],
      seed: 42,
      tools,
      logprobs: true,
      top_logprobs: 0,
      return_token_ids: true,
    });
  });

  it('asks an OpenAI-compatible server for reasoning as Atropos does: reasoning {enabled, effort | max_tokens}', async () => {
    const server = await serve();
    const client = clientFor(server);
    await client.generate(request({ reasoning: {} }));
    await client.generate(request({ reasoning: { effort: 'high', maxTokens: 4096 } }));
    await client.generate(request({ reasoning: { maxTokens: 4096 } }));
    await client.generate(request());
    const bodies = server.requests.map((r) => r.body as Record<string, unknown>);
    expect(bodies.map((b) => b.reasoning)).toEqual([
      { enabled: true },
      { enabled: true, effort: 'high' },
      { enabled: true, max_tokens: 4096 },
      undefined,
    ]);
    // Everything else is sent as without reasoning.
    expect(bodies[1]).toMatchObject({ max_tokens: 32, temperature: 1 });
    expect(bodies[1]).not.toHaveProperty('reasoning_effort');
  });

  it('asks api.openai.com for a top-level reasoning_effort (medium by default), at temperature 1 with max_completion_tokens', () => {
    const official = ServerConfigSchema.parse({ base_url: 'https://api.openai.com/v1', model_name: 'o4-mini' });
    const body = requestBody(official, request({ temperature: 0.2, reasoning: { effort: 'low' } })) as unknown as Record<string, unknown>;
    expect(body).toMatchObject({ reasoning_effort: 'low', temperature: 1, max_completion_tokens: 32 });
    expect(body).not.toHaveProperty('max_tokens');
    expect(body).not.toHaveProperty('reasoning');
    expect(requestBody(official, request({ reasoning: { maxTokens: 2048 } }))).toMatchObject({ reasoning_effort: 'medium' });
    expect(requestBody(official, request({ temperature: 0.2 }))).toMatchObject({ temperature: 0.2, max_tokens: 32 });
  });

  it('returns tool calls in the assistant message', async () => {
    const toolCalls = [{ id: 'call_0', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":2}' } }];
    const server = await serve({ responder: () => ({ choices: [{ text: '', toolCalls }] }) });
    const [completion] = await clientFor(server).generate(request());
    expect(completion).toMatchObject({
      text: '',
      message: { role: 'assistant', content: '', tool_calls: toolCalls },
      finishReason: 'tool_calls',
      tokenIds: encodeCompletion('', toolCalls),
    });
  });

  it('gives null token fields when the server returns no token ids', async () => {
    const server = await serve({ tokenIds: false });
    const [completion] = await clientFor(server).generate(request());
    expect(completion).toMatchObject({ text: 'choice 0', promptTokenIds: null, tokenIds: null });
    expect(completion!.logprobs).toEqual(encodeCompletion('choice 0').map(defaultLogprob));
  });

  it('accepts a plain OpenAI body without logprobs or token ids', async () => {
    const body = { choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'length' }] };
    const server = await serve({ responder: () => ({ status: 200, body }) });
    expect(await clientFor(server).generate(request())).toEqual([
      {
        text: 'hi',
        message: { role: 'assistant', content: 'hi' },
        finishReason: 'length',
        promptTokenIds: null,
        tokenIds: null,
        logprobs: null,
      },
    ]);
  });

  it("counts a completion's tokens from the server's usage only when the response has one choice", async () => {
    const choice = (index: number) => ({ index, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' });
    const reply = (choices: unknown[], usage?: unknown) => ({ status: 200, body: { choices, ...(usage ? { usage } : {}) } });
    const one = await serve({ responder: () => reply([choice(0)], { prompt_tokens: 9, completion_tokens: 7, total_tokens: 16 }) });
    expect((await clientFor(one).generate(request({ messagesOnly: true })))[0]!.completionTokens).toBe(7);
    // Two choices share one count: neither gets it. A body without usage gives none.
    const two = await serve({
      responder: () => reply([choice(0), choice(1)], { prompt_tokens: 9, completion_tokens: 7, total_tokens: 16 }),
    });
    for (const c of await clientFor(two).generate(request({ n: 2, messagesOnly: true }))) expect(c).not.toHaveProperty('completionTokens');
    const none = await serve({ responder: () => reply([choice(0)]) });
    expect((await clientFor(none).generate(request({ messagesOnly: true })))[0]).not.toHaveProperty('completionTokens');
  });

  it('classifies 429 with Retry-After as retryable and keeps the delay', async () => {
    const server = await serve({ responder: () => ({ status: 429, headers: { 'retry-after': '2' } }) });
    const err = await failure(clientFor(server).generate(request()));
    expect(err).toMatchObject({ kind: 'infrastructure', type: 'RateLimited', status: 429, retryAfterMs: 2000 });
    expect(server.calls).toBe(1); // the client itself never retries
  });

  it('classifies 500 as a retryable server error', async () => {
    const server = await serve({ responder: () => ({ status: 500 }) });
    expect(await failure(clientFor(server).generate(request()))).toMatchObject({
      kind: 'infrastructure',
      type: 'ServerError',
      status: 500,
    });
  });

  it('classifies 400 as a request error carrying the server message', async () => {
    const body = { error: { message: "This model's maximum context length is 2048 tokens.", type: 'BadRequestError', code: 400 } };
    const server = await serve({ responder: () => ({ status: 400, body }) });
    const err = await failure(clientFor(server).generate(request()));
    expect(err).toMatchObject({ kind: 'request', type: 'RequestRejected', status: 400 });
    expect(err.message).toBe("This model's maximum context length is 2048 tokens.");
  });

  it('classifies a reset connection as a connection error', async () => {
    const server = await serve({ responder: () => ({ destroySocket: true }) });
    expect(await failure(clientFor(server).generate(request()))).toMatchObject({ kind: 'infrastructure', type: 'ConnectionError' });
  });

  it('classifies a refused connection as a connection error', async () => {
    const server = await startScriptedOpenAI();
    await server.close();
    expect(await failure(clientFor(server).generate(request()))).toMatchObject({ kind: 'infrastructure', type: 'ConnectionError' });
  });

  it.each([
    ['unparseable JSON', '{"choices": [{"index": 0,'],
    ['a body without choices', { id: 'x', object: 'chat.completion' }],
    ['a choice without a message', { choices: [{ index: 0, finish_reason: 'stop' }] }],
  ])('classifies %s as a malformed response', async (_, body) => {
    const server = await serve({ responder: () => ({ status: 200, body }) });
    expect(await failure(clientFor(server).generate(request()))).toMatchObject({ kind: 'infrastructure', type: 'MalformedResponse' });
  });

  it('rejects token ids and logprobs of different lengths as malformed', async () => {
    const server = await serve({ responder: () => ({ choices: [{ text: 'ab', tokenIds: [97, 98, 3], logprobs: [-1, -1] }] }) });
    expect(await failure(clientFor(server).generate(request()))).toMatchObject({ type: 'MalformedResponse' });
  });

  it('fails with WrongChoiceCount when the server ignores n', async () => {
    const server = await serve({ responder: () => ({ choices: [{ text: 'only one' }] }) });
    const err = await failure(clientFor(server).generate(request({ n: 4 })));
    expect(err).toMatchObject({ kind: 'infrastructure', type: 'WrongChoiceCount' });
    expect(err.message).toContain('asked for 4 choices, the server returned 1');
  });

  it('cancels a hanging call promptly when the signal aborts, rejecting with its reason', async () => {
    const server = await serve({ responder: () => ({ hang: true }) });
    const controller = new AbortController();
    const call = clientFor(server).generate(request(), { signal: controller.signal });
    const outcome = call.then(
      () => 'resolved',
      (e: unknown) => e,
    );
    await vi.waitFor(() => expect(server.calls).toBe(1), { timeout: 5000 });
    const reason = new Error('cancelled by the test');
    const abortedAt = Date.now();
    controller.abort(reason);
    expect(await outcome).toBe(reason);
    expect(Date.now() - abortedAt).toBeLessThan(1000);
  });

  it('times out after config.timeout seconds', async () => {
    const server = await serve({ responder: () => ({ hang: true }) });
    expect(await failure(clientFor(server, { timeout: 0.3 }).generate(request()))).toMatchObject({
      kind: 'infrastructure',
      type: 'Timeout',
    });
  });

  it('reports progress while the server is working', async () => {
    let progress = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The server answers only after the client has reported progress three times.
    const server = await serve({
      responder: async (body) => {
        await released;
        return { choices: Array.from({ length: body.n ?? 1 }, () => ({ text: 'done' })) };
      },
    });
    const onProgress = () => {
      progress += 1;
      if (progress === 3) release();
    };
    const [completion] = await clientFor(server, {}, 10).generate(request(), { onProgress });
    expect(completion!.text).toBe('done');
    expect(progress).toBeGreaterThanOrEqual(3);
  });

  it('builds a multi-turn trajectory from the server token ids', async () => {
    const server = await serve({ responder: (_, call) => ({ choices: [{ text: call === 0 ? 'Let me check.' : '4' }] }) });
    const client = clientFor(server);
    const [first] = await client.generate(request());
    const one = buildTrainingSequence(first!.promptTokenIds!, { tokenIds: first!.tokenIds!, logprobs: first!.logprobs! });
    const conversation = [...messages, first!.message, { role: 'user', content: 'Go on.' }];
    const [second] = await client.generate(request({ messages: conversation }));
    const two = extendTrainingSequence(one, second!.promptTokenIds!, { tokenIds: second!.tokenIds!, logprobs: second!.logprobs! });

    const turnPrompt = second!.promptTokenIds!.slice(one.tokens.length);
    expect(turnPrompt).toEqual(encodeChat([{ role: 'user', content: 'Go on.' }]));
    expect(two.tokens).toEqual([...first!.promptTokenIds!, ...first!.tokenIds!, ...turnPrompt, ...second!.tokenIds!]);
    expect(two.masks).toEqual([
      ...first!.promptTokenIds!.map(() => -100),
      ...first!.tokenIds!,
      ...turnPrompt.map(() => -100),
      ...second!.tokenIds!,
    ]);
    expect(two.inferenceLogprobs).toEqual([
      ...first!.promptTokenIds!.map(() => 1),
      ...first!.logprobs!,
      ...turnPrompt.map(() => 1),
      ...second!.logprobs!,
    ]);
  });
});

describe('buildTrainingSequence', () => {
  it('masks the prompt and keeps the generated ids and logprobs', () => {
    expect(buildTrainingSequence([10, 11, 12], { tokenIds: [20, 21], logprobs: [-0.5, -0.25] })).toEqual({
      tokens: [10, 11, 12, 20, 21],
      masks: [-100, -100, -100, 20, 21],
      inferenceLogprobs: [1, 1, 1, -0.5, -0.25],
    });
  });

  it('refuses token ids and logprobs of different lengths', () => {
    expect(() => buildTrainingSequence([1], { tokenIds: [2, 3], logprobs: [-1] })).toThrow('2 token ids but 1 logprobs');
  });
});

describe('extendTrainingSequence', () => {
  const previous = buildTrainingSequence([10, 11, 12], { tokenIds: [20, 21], logprobs: [-0.5, -0.25] });

  it('reuses the previous sequence, masks the new turn and trains on the new completion', () => {
    expect(extendTrainingSequence(previous, [10, 11, 12, 20, 21, 30, 31], { tokenIds: [40, 41], logprobs: [-1, -2] })).toEqual({
      tokens: [10, 11, 12, 20, 21, 30, 31, 40, 41],
      masks: [-100, -100, -100, 20, 21, -100, -100, 40, 41],
      inferenceLogprobs: [1, 1, 1, -0.5, -0.25, 1, 1, -1, -2],
    });
  });

  it('leaves the previous sequence as it was; continueTrainingSequence grows it in place, once checked', () => {
    const before = structuredClone(previous);
    const extended = extendTrainingSequence(previous, [10, 11, 12, 20, 21, 30], { tokenIds: [40], logprobs: [-1] });
    expect(previous).toEqual(before);
    const grown = structuredClone(previous);
    expect(() => continueTrainingSequence(grown, [10, 99], { tokenIds: [40], logprobs: [-1] })).toThrow(TokenizationDriftError);
    expect(grown).toEqual(before);
    continueTrainingSequence(grown, [10, 11, 12, 20, 21, 30], { tokenIds: [40], logprobs: [-1] });
    expect(grown).toEqual(extended);
  });

  it('throws on re-tokenization drift', () => {
    const next = { tokenIds: [40], logprobs: [-1] };
    expect(() => extendTrainingSequence(previous, [10, 11, 99, 20, 21, 30], next)).toThrow(TokenizationDriftError);
    expect(() => extendTrainingSequence(previous, [10, 11, 99, 20, 21, 30], next)).toThrow(/position 2: expected 12, got 99/);
    expect(() => extendTrainingSequence(previous, [10, 11, 12], next)).toThrow(/position 3: expected 20, got undefined/);
  });
});
