import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Continuation } from '../inference/continuation.js';
import { InferenceError } from '../inference/errors.js';
import { loadTokenizer, type Tokenizer } from '../inference/tokenizer.js';
import type { Completion, TokenGenerateRequest } from '../inference/types.js';
import type { Message } from '../schema/scored-data.js';
import { FileSystemStore } from '../store/trajectory-store.js';
import { CallRecordSchema, HarnessSession, type HarnessSessionOptions, type SessionAnswer } from './harness-session.js';

let qwen: Tokenizer;
beforeAll(async () => {
  qwen = await loadTokenizer('qwen3');
});

const roots: string[] = [];
afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});
async function tempStore(): Promise<FileSystemStore> {
  const root = await mkdtemp(join(tmpdir(), 'clotho-harness-session-'));
  roots.push(root);
  return new FileSystemStore(root);
}

const callKey = (call: number) => `run/bugfix/item-0/harness/sample-0/call-${call}`;

/**
 * A token generator that stands in for the model: it answers `answer <t>` (t: the assistant turns already in the
 * prompt), with the end-of-turn token, and logprobs that also depend on how often it was called, so that an answer the
 * session asked for again could not pass for a replayed one. `fail` makes the next call throw.
 */
function scriptedGenerator(tokenizer: Tokenizer) {
  const requests: TokenGenerateRequest[] = [];
  const state: { fail: Error | undefined } = { fail: undefined };
  const continuation: Continuation = {
    tokenizer,
    client: {
      async generateTokens(request) {
        requests.push(request);
        if (state.fail) throw state.fail;
        const turn = tokenizer.decode(request.promptTokenIds).split('<|im_start|>assistant').length - 2;
        const text = `answer ${turn}`;
        const tokenIds = [...tokenizer.encode(text, { addSpecialTokens: false }), tokenizer.eos!.id];
        const completion: Completion = {
          text,
          message: { role: 'assistant', content: text },
          finishReason: 'stop',
          promptTokenIds: null,
          tokenIds,
          // Exact in binary, so they survive the store's JSON unchanged.
          logprobs: tokenIds.map((_, j) => -(j + 1 + 16 * requests.length) / 32),
          weightsVersion: requests.length,
        };
        return [completion];
      },
    },
  };
  return { continuation, requests, state };
}

/** The request of call k of an agent's episode: the task, then k answers (as the session gave them) and observations. */
function request(k: number, observation = (i: number) => `observation ${i}`): { model: string; messages: Message[] } {
  const messages: Message[] = [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'Fix the bug.' },
  ];
  for (let i = 0; i < k; i++) messages.push({ role: 'assistant', content: `answer ${i}` }, { role: 'user', content: observation(i) });
  return { model: 'any', messages };
}

function session(store: FileSystemStore, continuation: Continuation, options: Partial<HarnessSessionOptions> = {}) {
  const hooks = { onProgress: vi.fn(), onBudgetSpent: vi.fn(), onInfrastructureFailure: vi.fn() };
  const harness = new HarnessSession({
    store,
    callKey,
    continuation,
    model: 'clotho-policy',
    sampling: { temperature: 1, topP: 1 },
    maxCalls: 10,
    maxTokens: 10_000,
    signal: new AbortController().signal,
    ...hooks,
    ...options,
  });
  return { harness, ...hooks };
}

/** Sends the requests one after the other, as an agent does. */
async function play(harness: HarnessSession, bodies: unknown[]): Promise<SessionAnswer[]> {
  const answers: SessionAnswer[] = [];
  for (const body of bodies) answers.push(await harness.chat(body));
  return answers;
}

const sequence = (harness: HarnessSession) => ({
  tokens: harness.lastNode?.tokens,
  masks: harness.lastNode?.masks,
  logprobs: harness.lastNode?.logprobs,
});
const contentOf = (answer: SessionAnswer) => (answer.body as { choices: { message: { content: string } }[] }).choices[0]!.message.content;

describe('HarnessSession: recording', () => {
  it('writes each live call to the store before answering it, with the response the agent got', async () => {
    const store = await tempStore();
    const model = scriptedGenerator(qwen);
    const { harness } = session(store, model.continuation);

    // Call 0 with the store's write held back: the answer must wait for it.
    const put = store.put.bind(store);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let putStarted!: () => void;
    const started = new Promise<void>((resolve) => (putStarted = resolve));
    store.put = async (key, value) => {
      putStarted();
      await gate;
      return put(key, value);
    };
    let answered = false;
    const first = harness.chat(request(0)).then((answer) => {
      answered = true;
      return answer;
    });
    await started;
    expect(answered).toBe(false);
    expect(await store.tryGet(callKey(0))).toBeUndefined();
    release();
    const answers = [await first];
    store.put = put;
    answers.push(...(await play(harness, [request(1), request(2)])));

    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers.map(contentOf)).toEqual(['answer 0', 'answer 1', 'answer 2']);
    for (const [call, answer] of answers.entries()) {
      const record = CallRecordSchema.parse(await new FileSystemStore(store.root).tryGet(callKey(call)));
      expect(record.call).toBe(call);
      expect(record.response).toEqual(answer.body);
      expect(record.completion.text).toBe(`answer ${call}`);
      expect(record.completion.weightsVersion).toBe(call + 1);
      expect(record.summary).toBe(call === 0 ? 'user: Fix the bug.' : `user: observation ${call - 1}`);
    }
    expect(await store.tryGet(callKey(3))).toBeUndefined();
    expect(model.requests).toHaveLength(3);
    expect(harness).toMatchObject({ calls: 3, replayed: 0, diverged: [], weightsVersions: [1, 2, 3] });
    // One sequence grown turn by turn: the last call's prompt continues the tokens of the calls before it.
    expect(harness.state!.nodes).toHaveLength(1);
    expect(harness.lastNode!.turns.map((t) => t.content)).toEqual(['answer 0', 'answer 1', 'answer 2']);
  });
});

describe('HarnessSession: replay on a retried attempt', () => {
  async function recorded(calls: number) {
    const store = await tempStore();
    const model = scriptedGenerator(qwen);
    const { harness } = session(store, model.continuation);
    const answers = await play(
      harness,
      Array.from({ length: calls }, (_, k) => request(k)),
    );
    return { store, harness, answers };
  }

  it('answers the same requests, in order, from the record without asking the model', async () => {
    const first = await recorded(4);
    const model = scriptedGenerator(qwen);
    const { harness, onProgress } = session(first.store, model.continuation);
    const answers = await play(
      harness,
      Array.from({ length: 4 }, (_, k) => request(k)),
    );

    expect(model.requests).toEqual([]);
    expect(harness).toMatchObject({ calls: 4, replayed: 4, diverged: [] });
    expect(answers).toEqual(first.answers);
    expect(sequence(harness)).toEqual(sequence(first.harness));
    expect(harness.lastNode!.tokens.length).toBeGreaterThan(0);
    expect(harness.messages).toEqual(first.harness.messages);
    expect(harness.completionTokens).toBe(first.harness.completionTokens);
    expect(harness.weightsVersions).toEqual(first.harness.weightsVersions);
    expect(onProgress.mock.calls.flatMap(([event]) => (event ? [event.replayed] : []))).toEqual([true, true, true, true]);
  });

  it('replays up to the first request that differs, then goes live and says where it parted', async () => {
    const first = await recorded(4);
    const model = scriptedGenerator(qwen);
    const { harness } = session(first.store, model.continuation);
    // Call 2 carries a different observation of call 1's command (message 5 of its 6).
    const changed = (i: number) => (i === 1 ? 'observation 1, this time otherwise' : `observation ${i}`);
    const answers = await play(
      harness,
      Array.from({ length: 4 }, (_, k) => request(k, changed)),
    );

    expect(harness.calls).toBe(4);
    expect(harness.replayed).toBe(2);
    expect(model.requests).toHaveLength(2);
    expect(answers.slice(0, 2)).toEqual(first.answers.slice(0, 2));
    expect(answers.map(contentOf)).toEqual(['answer 0', 'answer 1', 'answer 2', 'answer 3']);
    expect(harness.diverged).toEqual([{ call: 2, reason: expect.stringMatching(/^message 5 differs/) as unknown }]);
    // The live calls were recorded over the old ones: a further retry replays this attempt.
    const record = CallRecordSchema.parse(await first.store.tryGet(callKey(2)));
    expect(record.response).toEqual(answers[2]!.body);
    expect(record.summary).toBe('user: observation 1, this time otherwise');
  });

  it('sends a request past the end of the record to the model, without calling it a divergence', async () => {
    const first = await recorded(2);
    const model = scriptedGenerator(qwen);
    const { harness } = session(first.store, model.continuation);
    const answers = await play(
      harness,
      Array.from({ length: 3 }, (_, k) => request(k)),
    );

    expect(harness).toMatchObject({ calls: 3, replayed: 2, diverged: [] });
    expect(model.requests).toHaveLength(1);
    expect(answers.slice(0, 2)).toEqual(first.answers);
    expect(contentOf(answers[2]!)).toBe('answer 2');
    // The live call continues the replayed sequence's tokens.
    expect(harness.lastNode!.tokens.slice(0, first.harness.lastNode!.tokens.length)).toEqual(first.harness.lastNode!.tokens);
    expect(model.requests[0]!.promptTokenIds.slice(0, first.harness.lastNode!.tokens.length)).toEqual(first.harness.lastNode!.tokens);
  });
});

describe('HarnessSession: budget, failures and bad requests', () => {
  it('refuses the call past maxCalls with a 400 naming the budget, and ends the episode', async () => {
    const store = await tempStore();
    const model = scriptedGenerator(qwen);
    const { harness, onBudgetSpent } = session(store, model.continuation, { maxCalls: 2 });
    const answers = await play(harness, [request(0), request(1), request(2), request(2)]);

    expect(answers.map((a) => a.status)).toEqual([200, 200, 400, 400]);
    expect(JSON.stringify(answers[2]!.body)).toMatch(/budget is spent \(2 model calls/);
    expect(onBudgetSpent).toHaveBeenCalledTimes(1);
    expect(onBudgetSpent).toHaveBeenCalledWith('calls');
    expect(model.requests).toHaveLength(2);
    expect(harness.calls).toBe(2);
    expect(await store.tryGet(callKey(2))).toBeUndefined();
  });

  it('refuses the call after the generated tokens reach maxTokens, and asks no more than what is left', async () => {
    const store = await tempStore();
    const model = scriptedGenerator(qwen);
    // "answer 0" and the end of turn, and one token more.
    const first = qwen.encode('answer 0', { addSpecialTokens: false }).length + 1;
    const { harness, onBudgetSpent } = session(store, model.continuation, { maxTokens: first + 1 });

    expect((await harness.chat({ ...request(0), max_tokens: 100 })).status).toBe(200);
    expect(model.requests[0]!.maxTokens).toBe(first + 1);
    expect(harness.completionTokens).toBe(first);
    expect((await harness.chat(request(1))).status).toBe(200);
    expect(model.requests[1]!.maxTokens).toBe(1);
    const refused = await harness.chat(request(2));
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain(`${first + 1} generated tokens`);
    expect(onBudgetSpent).toHaveBeenCalledWith('tokens');
    expect(model.requests).toHaveLength(2);
  });

  it('fails the attempt when the model server fails: 503 to the agent, nothing recorded', async () => {
    const store = await tempStore();
    const model = scriptedGenerator(qwen);
    const { harness, onInfrastructureFailure } = session(store, model.continuation);
    expect((await harness.chat(request(0))).status).toBe(200);

    const failure = new InferenceError('ServerError', 'upstream answered 500', { status: 500 });
    model.state.fail = failure;
    const answer = await harness.chat(request(1));
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({
      error: { type: 'server_error', message: expect.stringContaining('upstream answered 500') as unknown },
    });
    expect(onInfrastructureFailure).toHaveBeenCalledTimes(1);
    expect(onInfrastructureFailure).toHaveBeenCalledWith(failure);
    expect(await store.tryGet(callKey(1))).toBeUndefined();
    expect(harness.calls).toBe(1);

    // A request the model refuses is the agent's: a 400, and the attempt goes on.
    model.state.fail = new InferenceError('RequestRejected', 'prompt too long', { status: 400 });
    const refused = await harness.chat(request(1));
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('prompt too long');
    expect(onInfrastructureFailure).toHaveBeenCalledTimes(1);
    expect(await store.tryGet(callKey(1))).toBeUndefined();
  });

  // Issue 38, finding 1: an attempt Temporal gave up on (its cancellation arrived) leaves the records to the next one.
  it('records nothing once its attempt is cancelled, even a completion that came back after the cancellation', async () => {
    const store = await tempStore();
    const model = scriptedGenerator(qwen);
    const cancel = new AbortController();
    const { harness } = session(store, model.continuation, { signal: cancel.signal });
    expect((await harness.chat(request(0))).status).toBe(200);
    // The model answers call 1 (it does not read the signal), but the attempt was cancelled while it worked.
    const generate = model.continuation.client.generateTokens.bind(model.continuation.client);
    model.continuation.client.generateTokens = async (...args) => {
      cancel.abort(new Error('attempt timed out'));
      return generate(...args);
    };
    const answer = await harness.chat(request(1));
    expect(answer.status).toBe(503);
    expect(JSON.stringify(answer.body)).toContain('attempt timed out');
    expect(await store.tryGet(callKey(1))).toBeUndefined();
    expect(harness.calls).toBe(1);
  });

  it('streams a completion to an agent that asks for it, live and replayed, as OpenAI chunks of the recorded answer', async () => {
    const store = await tempStore();
    const model = scriptedGenerator(qwen);
    const first = session(store, model.continuation).harness;
    const streamed = { ...request(0), stream: true, stream_options: { include_usage: true } };
    const live = await first.chat(streamed);
    const replay = await session(store, model.continuation).harness.chat(streamed);

    expect(live.status).toBe(200);
    const events = live.events!;
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)) as Record<string, any>);
    const record = (await store.get(callKey(0))) as { response: { choices: { message: { content: string } }[]; usage: unknown } };
    // The whole answer in the first delta, the finish reason in the next, the usage last; the record is the completion.
    expect(chunks.map((c) => c.object)).toEqual(['chat.completion.chunk', 'chat.completion.chunk', 'chat.completion.chunk']);
    expect(chunks[0]!.choices[0].delta.content).toBe(record.response.choices[0]!.message.content);
    expect(chunks[1]!.choices[0].finish_reason).toBe('stop');
    expect(chunks[2]!.usage).toEqual(record.response.usage);
    expect(replay.events).toEqual(events);
    expect(model.requests).toHaveLength(1);
  });

  it('rejects bodies it cannot answer: no messages (422) and n > 1 (400)', async () => {
    const store = await tempStore();
    const model = scriptedGenerator(qwen);
    const { harness } = session(store, model.continuation);
    const missing = await harness.chat({ model: 'any' });
    const many = await harness.chat({ ...request(0), n: 2 });

    expect(missing.status).toBe(422);
    expect(JSON.stringify(missing.body)).toContain('messages');
    expect(many.status).toBe(400);
    expect(JSON.stringify(many.body)).toContain('n must be 1');
    expect(model.requests).toEqual([]);
    expect(harness.calls).toBe(0);
    expect(await store.tryGet(callKey(0))).toBeUndefined();
    // The session still answers a good request after them.
    expect((await harness.chat(request(0))).status).toBe(200);
  });
});
