import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManagedProxy } from '../../src/api/managed-proxy.js';
import { proxyServers, startManagedProxy, type RunningManagedProxy } from '../../src/cli/commands/proxy.js';
import { loadTokenizer, type Tokenizer } from '../../src/inference/tokenizer.js';
import { MASKED, MASKED_LOGPROB } from '../../src/schema/scored-data.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';

/**
 * Atropos's ManagedServer OpenAI proxy: an agent that speaks plain OpenAI (the `openai` npm client) plays a
 * tool-calling episode through a session, against a scripted model that takes token-id prompts; the session's
 * recorded sequences must be exactly the ids the server was sent and generated, masked and with its logprobs.
 */

const call = (city: string) => `<tool_call>\n{"name": "get_weather", "arguments": {"city": "${city}"}}\n</tool_call>`;
const tools = [
  {
    type: 'function' as const,
    function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  },
];
/** Exact in binary, so equality after JSON holds; different per position, so a shifted alignment shows. */
const logprob = (position: number) => -((position % 7) + 1) / 8;

let qwen: Tokenizer;
let scripted: ScriptedOpenAI;
let proxy: RunningManagedProxy;
/** What the server answered, by its call index: the prompt it got and each choice's ids and logprobs. */
const answered: { prompt: number[]; choices: { ids: number[]; logprobs: number[] }[] }[] = [];

beforeAll(async () => {
  qwen = await loadTokenizer('qwen3');
  const eos = qwen.eos!.id;
  scripted = await startScriptedOpenAI({
    responder: (body, index) => {
      const prompt = body.prompt as number[];
      // First turn: a tool call (a different city per choice); after a tool result: the answer.
      const afterTool = qwen.decode(prompt).includes('<tool_response>');
      const choices = Array.from({ length: body.n ?? 1 }, (_, i) => {
        const text = afterTool ? `It is 18 degrees (answer ${i}).` : call(['Paris', 'Lyon'][i] ?? 'Nice');
        const ids = [...qwen.encode(text, { addSpecialTokens: false }), eos];
        return { text, ids, logprobs: ids.map((_, j) => logprob(j + i)) };
      });
      answered[index] = { prompt, choices: choices.map(({ ids, logprobs }) => ({ ids, logprobs })) };
      return { choices: choices.map(({ text, ids, logprobs }) => ({ text, tokenIds: ids, logprobs })) };
    },
  });
  proxy = await startManagedProxy({
    config: { model_name: 'scripted-model', tokenizer_name: 'qwen3', servers: [{ base_url: scripted.baseUrl, server_type: 'openai' }] },
    port: 0,
  });
});
afterAll(async () => {
  await proxy?.close();
  await scripted?.close();
});

const json = async (path: string, init?: RequestInit) => {
  const response = await fetch(`${proxy.url}${path}`, init);
  return { status: response.status, text: await response.clone().text(), body: (await response.json()) as any };
};
const createSession = async () =>
  (await json('/sessions/create', { method: 'POST', body: '{}' })).body as { uuid: string; base_url: string };
const agent = (uuid: string) => new OpenAI({ baseURL: `${proxy.url}/${uuid}/v1`, apiKey: 'unused', maxRetries: 0 });
type Node = { full_text: string; tokens: number[]; masked_tokens: number[]; logprobs: number[]; metadata: { finish_reason: string } };
const nodesOf = async (uuid: string) => (await json(`/${uuid}/nodes`)) as { text: string; body: { nodes: Node[] } };

/** The sequence the server's answers `turns` (call index, choice) build: prompt masked, generated ids and logprobs kept. */
function expectedSequence(turns: [call: number, choice: number][]) {
  const last = answered[turns.at(-1)![0]]!;
  const tokens = [...last.prompt, ...last.choices[turns.at(-1)![1]]!.ids];
  const masks = tokens.map(() => MASKED);
  const logprobs = tokens.map(() => MASKED_LOGPROB);
  for (const [index, choice] of turns) {
    const { prompt, choices } = answered[index]!;
    choices[choice]!.ids.forEach((id, j) => {
      masks[prompt.length + j] = id;
      logprobs[prompt.length + j] = choices[choice]!.logprobs[j]!;
    });
  }
  return { tokens, masked_tokens: masks, logprobs };
}

describe('the ManagedServer OpenAI proxy', () => {
  it('records a tool episode played with the openai client as the exact ids, masks and logprobs of the server', async () => {
    const session = await createSession();
    expect(session.base_url).toBe(scripted.baseUrl);
    const client = agent(session.uuid);
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You answer with tools.' },
      { role: 'user', content: 'Weather in Paris?' },
    ];
    const first = await client.chat.completions.create({ model: 'scripted-model', messages, tools, max_tokens: 64 });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls?.map((c) => c.type === 'function' && [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['get_weather', { city: 'Paris' }],
    ]);
    const calls = scripted.requests.filter((r) => r.path === '/v1/completions');
    expect(answered[0]!.prompt).toEqual(qwen.encodeChat(messages as never, { addGenerationPrompt: true, tools }));
    expect(calls.at(-1)!.body).toMatchObject({ max_tokens: 64, temperature: 1, return_token_ids: true });

    messages.push(choice.message, { role: 'tool', tool_call_id: choice.message.tool_calls![0]!.id, content: '18 C, cloudy' });
    const render = await json(`/${session.uuid}/v1/chat/completions/render`, { method: 'POST', body: JSON.stringify({ messages, tools }) });
    const second = await client.chat.completions.create({ model: 'scripted-model', messages, tools });
    expect(second.choices[0]!.message.content).toBe('It is 18 degrees (answer 0).');
    expect(second.choices[0]!.finish_reason).toBe('stop');
    // The second prompt keeps the first turn's ids as the server sent them, and the render showed it beforehand.
    expect(answered[1]!.prompt.slice(0, answered[0]!.prompt.length + answered[0]!.choices[0]!.ids.length)).toEqual([
      ...answered[0]!.prompt,
      ...answered[0]!.choices[0]!.ids,
    ]);
    expect(render.body).toEqual({
      prompt_text: qwen.decode(answered[1]!.prompt),
      token_ids: answered[1]!.prompt,
      num_tokens: answered[1]!.prompt.length,
    });

    const { text, body } = await nodesOf(session.uuid);
    expect(body.nodes).toHaveLength(1);
    const [node] = body.nodes;
    expect(node).toEqual({
      ...expectedSequence([
        [0, 0],
        [1, 0],
      ]),
      full_text: qwen.decode(node!.tokens),
      metadata: { finish_reason: 'stop' },
    });
    expect(text).toMatch(/"logprobs":\[1\.0,1\.0,/);
    expect((await json('/sessions')).body.sessions).toContainEqual(expect.objectContaining({ uuid: session.uuid, num_nodes: 1 }));
  });

  it('keeps one sequence per choice of n and continues the one whose answer the agent sent back', async () => {
    const session = await createSession();
    const client = agent(session.uuid);
    const start = answered.length;
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather?' }];
    const first = await client.chat.completions.create({ model: 'm', messages, tools, n: 2 });
    expect(
      first.choices.map(
        (c) => c.message.tool_calls?.[0]?.type === 'function' && JSON.parse(c.message.tool_calls[0].function.arguments).city,
      ),
    ).toEqual(['Paris', 'Lyon']);
    const lyon = first.choices[1]!.message;
    messages.push(lyon, { role: 'tool', tool_call_id: lyon.tool_calls![0]!.id, content: '20 C' });
    await client.chat.completions.create({ model: 'm', messages, tools });
    const { nodes } = (await nodesOf(session.uuid)).body;
    expect(nodes.map(({ tokens, masked_tokens, logprobs }) => ({ tokens, masked_tokens, logprobs }))).toEqual([
      expectedSequence([[start, 0]]),
      expectedSequence([
        [start, 1],
        [start + 1, 0],
      ]),
    ]);
  });

  it('starts a new sequence when the agent sends back an answer other than the one it got, as Atropos does', async () => {
    const session = await createSession();
    const client = agent(session.uuid);
    const first = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
    const edited = `${first.choices[0]!.message.content!} (edited)`;
    await client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: edited },
        { role: 'user', content: 'And?' },
      ],
    });
    const { nodes } = (await nodesOf(session.uuid)).body;
    expect(nodes).toHaveLength(2);
    // The second sequence renders the edited answer as prompt text: nothing of it is trained on.
    expect(nodes[1]!.full_text).toContain(edited);
    expect(nodes[1]!.masked_tokens.filter((m) => m !== MASKED)).toEqual(answered.at(-1)!.choices[0]!.ids);
  });

  it("streams a session's completion to an agent that asks for it, read with the OpenAI SDK's stream reader, and records it", async () => {
    const session = await createSession();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const stream = await agent(session.uuid).chat.completions.create({
      model: 'scripted-model',
      messages,
      tools,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const calls = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []));
    expect(calls.map((call) => [call.index, call.function?.name, JSON.parse(call.function?.arguments ?? '')])).toEqual([
      [0, 'get_weather', { city: 'Paris' }],
    ]);
    expect(chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason)).filter(Boolean)).toEqual(['tool_calls']);
    const { prompt, choices } = answered.at(-1)!;
    expect(chunks.at(-1)!.usage).toEqual({
      prompt_tokens: prompt.length,
      completion_tokens: choices[0]!.ids.length,
      total_tokens: prompt.length + choices[0]!.ids.length,
    });
    // Streamed or not, the session records the sequence the server generated.
    const { nodes } = (await nodesOf(session.uuid)).body;
    expect(nodes.map((n) => n.masked_tokens.filter((m) => m !== MASKED))).toEqual([choices[0]!.ids]);
  });

  it('answers in OpenAI error format, and forgets a deleted session', async () => {
    const session = await createSession();
    const empty = await json(`/${session.uuid}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ messages: [] }) });
    expect(empty).toMatchObject({ status: 400, body: { error: { message: 'messages must not be empty', code: 400 } } });
    expect((await json(`/${session.uuid}`, { method: 'DELETE' })).body).toEqual({ status: 'deleted', uuid: session.uuid });
    const gone = agent(session.uuid).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    await expect(gone).rejects.toMatchObject({
      status: 404,
      error: { message: `Session ${session.uuid} not found`, type: 'invalid_request_error' },
    });
    expect((await json('/sessions/create', { method: 'POST', body: JSON.stringify({ base_url: 'http://elsewhere/v1' }) })).status).toBe(
      404,
    );
    expect((await json('/health')).body).toMatchObject({ status: 'ok', model: 'scripted-model', servers: 1, healthy_servers: 1 });
  });
});

describe("the proxy's listening policy, in-process (issue 38, finding 8)", () => {
  it('with a token, answers 401 naming the header to every route but GET /health', async () => {
    const { servers } = proxyServers({ model_name: 'scripted-model', servers: [{ base_url: scripted.baseUrl, server_type: 'openai' }] });
    const guarded = createManagedProxy({ servers, tokenizer: qwen, token: 'pt' });
    try {
      for (const [path, method] of [
        ['/sessions/create', 'POST'],
        ['/sessions', 'GET'],
        ['/setup', 'POST'],
        ['/some-session/v1/chat/completions', 'POST'],
      ]) {
        const denied = await guarded.app.request(path!, { method: method!, body: method === 'POST' ? '{}' : null });
        expect([path, denied.status]).toEqual([path, 401]);
        expect(((await denied.json()) as any).error.message).toContain('Authorization: Bearer');
      }
      const created = await guarded.app.request('/sessions/create', {
        method: 'POST',
        body: '{}',
        headers: { Authorization: 'Bearer pt' },
      });
      expect(created.status).toBe(200);
      expect((await guarded.app.request('/health')).status).toBe(200);
    } finally {
      guarded.close();
    }
  });
});
