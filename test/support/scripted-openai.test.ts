import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  defaultLogprob,
  encodeChat,
  encodeCompletion,
  encodeHeader,
  encodeText,
  startScriptedOpenAI,
  TOKEN,
  type ScriptedOpenAI,
} from './scripted-openai.js';
import { scriptedServers } from './scripted-servers.js';

const serve = scriptedServers();

async function post(server: ScriptedOpenAI, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

const messages = [{ role: 'user', content: 'hi' }];

describe('scripted tokenizer', () => {
  it('renders a conversation as a chat template would', () => {
    expect(encodeChat([{ role: 'user', content: 'hi' }])).toEqual([
      TOKEN.START,
      ...encodeText('user'),
      TOKEN.SEP,
      104,
      105,
      TOKEN.END,
      TOKEN.START,
      ...encodeText('assistant'),
      TOKEN.SEP,
    ]);
    expect(encodeCompletion('ok')).toEqual([111, 107, TOKEN.END]);
  });

  it('renders each image part as one placeholder token, as a vision server does, and its text parts as text', () => {
    const parts = [
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      { type: 'text', text: 'hi' },
    ];
    expect(encodeChat([{ role: 'user', content: parts }], false)).toEqual([
      TOKEN.START,
      ...encodeText('user'),
      TOKEN.SEP,
      TOKEN.IMAGE,
      104,
      105,
      TOKEN.END,
    ]);
    // Other lists are not content parts: they are written out as JSON, as before.
    expect(encodeChat([{ role: 'user', content: [1] }], false)).toEqual([
      TOKEN.START,
      ...encodeText('user'),
      TOKEN.SEP,
      ...encodeText('[1]'),
      TOKEN.END,
    ]);
  });

  it('makes a longer conversation extend the shorter prompt plus its completion', () => {
    const message = fc.record({ role: fc.constantFrom('system', 'user', 'tool'), content: fc.string() });
    const toolCalls = fc.option(fc.array(fc.record({ id: fc.string(), type: fc.constant('function') }), { minLength: 1 }), {
      nil: undefined,
    });
    fc.assert(
      fc.property(fc.array(message, { minLength: 1 }), fc.string(), toolCalls, message, (history, text, calls, next) => {
        const before = [...encodeChat(history), ...encodeCompletion(text, calls)];
        const assistant = { role: 'assistant', content: text, ...(calls ? { tool_calls: calls } : {}) };
        const after = encodeChat([...history, assistant, next]);
        expect(after.slice(0, before.length)).toEqual(before);
        expect(after.slice(before.length)).toEqual([...encodeChat([next], false), ...encodeHeader('assistant')]);
      }),
    );
  });
});

describe('startScriptedOpenAI', () => {
  it('answers chat completions in vLLM format, honouring n, logprobs and return_token_ids', async () => {
    const server = await serve({ model: 'toy' });
    const { status, json } = await post(server, '/chat/completions', { messages, n: 2, logprobs: true, return_token_ids: true });
    expect(status).toBe(200);
    expect(json).toMatchObject({ object: 'chat.completion', model: 'toy', prompt_token_ids: encodeChat(messages) });
    expect(json.choices).toHaveLength(2);
    const ids = encodeCompletion('choice 1');
    expect(json.choices[1]).toMatchObject({
      index: 1,
      message: { role: 'assistant', content: 'choice 1', tool_calls: [] },
      finish_reason: 'stop',
      token_ids: ids,
    });
    expect(json.choices[1].logprobs.content.map((e: { logprob: number }) => e.logprob)).toEqual(ids.map(defaultLogprob));
    expect(json.choices[1].logprobs.content[0]).toEqual({ token: 'c', logprob: defaultLogprob(99), bytes: [99], top_logprobs: [] });
    expect(json.choices[1].logprobs.content.at(-1).token).toBe('<|end|>');
    const promptTokens = encodeChat(messages).length;
    expect(json.usage).toEqual({
      prompt_tokens: promptTokens,
      completion_tokens: 2 * ids.length,
      total_tokens: promptTokens + 2 * ids.length,
    });
  });

  it('leaves token ids and logprobs out unless asked, and can refuse token ids or both', async () => {
    const plain = await post(await serve(), '/chat/completions', { messages });
    expect(plain.json.prompt_token_ids).toBeUndefined();
    expect(plain.json.choices[0].token_ids).toBeUndefined();
    expect(plain.json.choices[0].logprobs).toBeNull();
    const refusing = await post(await serve({ tokenIds: false }), '/chat/completions', { messages, return_token_ids: true });
    expect(refusing.json.prompt_token_ids).toBeUndefined();
    expect(refusing.json.choices[0].token_ids).toBeUndefined();
    // Messages only, as most hosted APIs answer: neither token ids nor logprobs, whatever was asked.
    const bare = await post(await serve({ tokenIds: false, logprobs: false }), '/chat/completions', {
      messages,
      logprobs: true,
      return_token_ids: true,
    });
    expect(bare.json.choices[0]).toMatchObject({ message: { content: 'choice 0' }, logprobs: null });
    expect(bare.json.choices[0].token_ids).toBeUndefined();
    const text = await post(await serve({ tokenIds: false, logprobs: false }), '/completions', { prompt: 'hi', logprobs: 0 });
    expect(text.json.choices[0].logprobs).toBeNull();
  });

  it('uses scripted texts, token ids, logprobs and tool calls', async () => {
    const toolCalls = [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }];
    const server = await serve({
      responder: (_, call) => ({
        choices: [
          { text: `call ${call}`, tokenIds: [7, 8], logprobs: [-0.5, -1.5], finishReason: 'length' },
          { text: '', toolCalls },
        ],
      }),
    });
    const { json } = await post(server, '/chat/completions', { messages, logprobs: true, return_token_ids: true });
    expect(json.choices[0]).toMatchObject({ message: { content: 'call 0' }, token_ids: [7, 8], finish_reason: 'length' });
    expect(json.choices[0].logprobs.content.map((e: { logprob: number }) => e.logprob)).toEqual([-0.5, -1.5]);
    expect(json.choices[1]).toMatchObject({
      message: { tool_calls: toolCalls },
      finish_reason: 'tool_calls',
      token_ids: encodeCompletion('', toolCalls),
    });
  });

  it('serves /v1/models, /health and minimal /v1/completions', async () => {
    const server = await serve({ model: 'toy' });
    const models = await (await fetch(`${server.baseUrl}/models`)).json();
    expect(models).toMatchObject({ object: 'list', data: [{ id: 'toy', object: 'model' }] });
    expect((await fetch(`${server.baseUrl.replace(/\/v1$/, '')}/health`)).status).toBe(200);
    const text = await post(server, '/completions', { prompt: 'ab', n: 2, logprobs: 0, return_token_ids: true });
    expect(text.json.choices).toHaveLength(2);
    expect(text.json.choices[0]).toMatchObject({
      text: 'choice 0',
      prompt_token_ids: [97, 98],
      token_ids: encodeCompletion('choice 0'),
      finish_reason: 'stop',
    });
    expect(text.json.choices[0].logprobs.token_logprobs).toEqual(encodeCompletion('choice 0').map(defaultLogprob));
    const ids = await post(server, '/completions', { prompt: [5, 6, 7], return_token_ids: true });
    expect(ids.json.choices[0].prompt_token_ids).toEqual([5, 6, 7]);
  });

  it('records every request and counts completion calls', async () => {
    const server = await serve();
    const before = Date.now();
    await fetch(`${server.baseUrl}/models`);
    await post(server, '/chat/completions', { messages, temperature: 0.5 });
    await post(server, '/completions', { prompt: 'x' });
    expect(server.calls).toBe(2);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/models',
      'POST /v1/chat/completions',
      'POST /v1/completions',
    ]);
    expect(server.requests[1]!.body).toEqual({ messages, temperature: 0.5 });
    expect(server.requests[1]!.at).toBeGreaterThanOrEqual(before);
  });

  it('fails as scripted: status, headers and raw body', async () => {
    const server = await serve({
      responder: (_, call) => (call === 0 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 200, body: 'not json' }),
    });
    const limited = await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', body: JSON.stringify({ messages }) });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    expect(await limited.json()).toMatchObject({ error: { message: 'Too Many Requests', code: 429 } });
    const raw = await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', body: JSON.stringify({ messages }) });
    expect(await raw.text()).toBe('not json');
  });

  it('delays an answer by delayMs', async () => {
    const server = await serve({ responder: () => ({ choices: [{ text: 'late' }], delayMs: 150 }) });
    const started = Date.now();
    const { json } = await post(server, '/chat/completions', { messages });
    expect(json.choices[0].message.content).toBe('late');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('drops the socket, or hangs until closed', async () => {
    const dropping = await serve({ responder: () => ({ destroySocket: true }) });
    await expect(post(dropping, '/chat/completions', { messages })).rejects.toThrow();
    const hanging = await startScriptedOpenAI({ responder: () => ({ hang: true }) });
    const pending = post(hanging, '/chat/completions', { messages });
    pending.catch(() => undefined);
    await expect.poll(() => hanging.calls).toBe(1);
    await hanging.close();
    await expect(pending).rejects.toThrow();
  });

  it('answers bad requests and responder failures with OpenAI-style errors', async () => {
    const server = await serve({
      responder: () => {
        throw new Error('boom');
      },
    });
    const invalid = await post(server, '/chat/completions', { messages: [] });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error.message).toContain('messages');
    const broken = await post(server, '/chat/completions', { messages });
    expect(broken.status).toBe(500);
    expect(broken.json.error.message).toContain('boom');
    expect((await post(server, '/nowhere', {})).status).toBe(404);
  });
});
