import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createInferenceActivities } from '../../src/activities/inference.js';
import { startLocalEngine, type RunningLocalEngine } from '../../src/inference/local/start.js';
import type { AnyEnvironment } from '../../src/env/define.js';
import { loadEnvironmentData } from '../../src/env/loaded.js';
import type { TokenGenerateRequest } from '../../src/inference/types.js';
import type { Continuation } from '../../src/inference/continuation.js';
import { ChatTemplate } from '../../src/inference/local/chat-template.js';
import { createOpenAIClient } from '../../src/inference/openai-client.js';
import { loadTokenizer, type Tokenizer } from '../../src/inference/tokenizer.js';
import type { Completion, GenerateOptions } from '../../src/inference/types.js';
import { BaseEnvConfigSchema, ServerConfigSchema } from '../../src/config/schemas.js';
import { MASKED, MASKED_LOGPROB, type Message, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { FileSystemStore } from '../../src/store/trajectory-store.js';
import { startWorkers } from '../../src/workers/workers.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { fastSteps } from '../support/harness.js';
import { defaultLogprob, startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { testConnection, uniqueId, uniqueTaskQueue } from '../support/temporal.js';
import { weatherReport, weatherTools } from '../support/tool-environment.js';

/** One choice a server returned for a token-id prompt. */
interface Sampled {
  prompt: number[];
  tokenIds: number[];
  logprobs: number[];
}

const CompletionsSchema = z.looseObject({
  choices: z.array(
    z.looseObject({
      text: z.string(),
      finish_reason: z.string().nullable(),
      token_ids: z.array(z.number().int()),
      logprobs: z.looseObject({ token_logprobs: z.array(z.number()) }),
    }),
  ),
});

/**
 * A token-id client over `/v1/completions` (the embedded engine and the scripted server both take
 * token-id prompts there) that records every choice. `extra` adds sampling fields: a fixed seed, and a
 * stop string so that a random-weight model ends its turns by itself instead of spending its budget.
 */
function completionsClient(baseUrl: string, extra: Record<string, unknown> = {}) {
  const sampled: Sampled[] = [];
  return {
    sampled,
    async generateTokens(r: TokenGenerateRequest, options?: GenerateOptions): Promise<Completion[]> {
      const body = {
        prompt: r.promptTokenIds,
        n: r.n,
        max_tokens: r.maxTokens,
        temperature: r.temperature,
        top_p: r.topP,
        logprobs: 0,
        return_token_ids: true,
        ...extra,
      };
      const response = await fetch(`${baseUrl}/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: options?.signal ?? null,
      });
      if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
      return CompletionsSchema.parse(await response.json()).choices.map((c) => {
        sampled.push({ prompt: r.promptTokenIds, tokenIds: c.token_ids, logprobs: c.logprobs.token_logprobs });
        return {
          text: c.text,
          message: { role: 'assistant', content: c.text },
          finishReason: c.finish_reason,
          promptTokenIds: r.promptTokenIds,
          tokenIds: c.token_ids,
          logprobs: c.logprobs.token_logprobs,
        };
      });
    },
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs one rollout group of `environment` on the dev server with real workers that generate token-in. */
async function runGroup(
  environment: AnyEnvironment,
  envConfig: Record<string, unknown>,
  baseUrl: string,
  continuation: Continuation,
  maxTurns = 3,
) {
  const temporal = await testConnection();
  const queues = { workflows: uniqueTaskQueue('wf'), llm: uniqueTaskQueue('llm'), env: uniqueTaskQueue('env') };
  const root = await mkdtemp(join(tmpdir(), 'clotho-store-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const store = new FileSystemStore(root);
  const config = BaseEnvConfigSchema.extend(environment.config).parse({ ...environment.defaults, ...envConfig }) as Parameters<
    typeof loadEnvironmentData
  >[1];
  const loaded = await loadEnvironmentData(environment, config);
  const chat = createOpenAIClient(ServerConfigSchema.parse({ base_url: baseUrl, timeout: 30 }));
  const tokenIn = createInferenceActivities({ inference: () => chat, continuation: () => continuation, store });
  const workers = await startWorkers({
    address: temporal.address,
    namespace: temporal.namespace,
    taskQueues: queues,
    environments: { [environment.name]: loaded },
    inference: () => chat,
    store,
    // Workers take no continuation yet: the LLM worker gets the generate activity built with one.
    wrapActivities: (activities) => ('generateTurn' in activities ? { ...activities, ...tokenIn } : activities),
  });
  cleanups.push(() => workers.shutdown());
  const runId = uniqueId('run');
  const result = await temporal.client.workflow.execute(rolloutGroup, {
    taskQueue: queues.workflows,
    workflowId: uniqueId('rg-tokens'),
    args: [
      {
        runId,
        environment: environment.name,
        itemIndex: 0,
        groupSize: 2,
        maxTurns,
        maxTokenLength: config.max_token_length,
        sampling: { temperature: 1, topP: 1 },
        ensureScoresAreNotSame: false,
        teacherTopK: null,
        taskQueues: { llm: queues.llm, env: queues.env },
        steps: fastSteps(),
        searchAttributes: true,
      },
    ],
  });
  expect(result.status).toBe('scored');
  expect(result.turns).toBe(maxTurns);
  return { result, group: await store.get<ScoredDataGroup>(result.group!) };
}

/** The server's answers that built `tokens`, turn by turn: each prompt plus answer is a prefix of it. */
function turnsOf(tokens: number[], sampled: Sampled[]): Sampled[] {
  const starts = (seq: number[], prefix: number[]) => prefix.length <= seq.length && prefix.every((t, i) => seq[i] === t);
  const turns = sampled.filter((s) => starts(tokens, [...s.prompt, ...s.tokenIds])).sort((a, b) => a.prompt.length - b.prompt.length);
  // Samples that answered alike (a scripted model) are one turn.
  return turns.filter((s, k) => k === 0 || s.prompt.length !== turns[k - 1]!.prompt.length);
}

/**
 * Checks one trajectory against what the server returned and against the template: the prompt of every
 * turn is the previous turn's prompt and answer followed by the template's text for the new messages,
 * tokenized by `tokenize`; only the answers are unmasked, with their ids and logprobs.
 */
function checkTrajectory(
  group: ScoredDataGroup,
  i: number,
  sampled: Sampled[],
  render: (m: Message[]) => string,
  tokenize: (s: string) => number[],
  eos: number,
  turnCount = 3,
) {
  const tokens = group.tokens[i]!;
  const turns = turnsOf(tokens, sampled);
  expect(turns).toHaveLength(turnCount);
  turns.forEach((turn) => expect(turn.logprobs).toHaveLength(turn.tokenIds.length));
  for (let k = 1; k < turns.length; k++) {
    expect(turns[k]!.prompt.slice(0, turns[k - 1]!.prompt.length + turns[k - 1]!.tokenIds.length)).toEqual([
      ...turns[k - 1]!.prompt,
      ...turns[k - 1]!.tokenIds,
    ]);
  }
  expect(tokens).toEqual([...turns.at(-1)!.prompt, ...turns.at(-1)!.tokenIds]);

  const masks = tokens.map(() => MASKED);
  const logprobs = tokens.map(() => MASKED_LOGPROB);
  for (const turn of turns) {
    turn.tokenIds.forEach((id, j) => {
      masks[turn.prompt.length + j] = id;
      logprobs[turn.prompt.length + j] = turn.logprobs[j]!;
    });
  }
  expect(group.masks[i]).toEqual(masks);
  expect(group.inference_logprobs![i]).toEqual(logprobs);

  // The conversation up to the last answer, each answer replaced by a marker, rendered by the template:
  // between the answers, the sequence holds exactly the tokenized template text.
  const messages = group.messages![i]!;
  expect(messages.map((m) => m.role)).toEqual([
    'system',
    'user',
    ...Array.from({ length: turnCount - 1 }, () => ['assistant', 'tool']).flat(),
    'assistant',
  ]);
  let answer = 0;
  const marked = messages.slice(0, -1).map((m) => (m.role === 'assistant' ? { role: 'assistant', content: `\u0001${answer++}\u0001` } : m));
  // eslint-disable-next-line no-control-regex -- \u0001 marks the answers: a character no chat template or text has
  const segments = render(marked).split(/\u0001\d+\u0001/);
  const expected = segments.flatMap((segment, k) => {
    const ids = tokenize(segment);
    // An answer that ended with the end-of-turn token already holds the one the template writes.
    return [...(turns[k - 1]?.tokenIds.at(-1) === eos ? ids.slice(1) : ids), ...turns[k]!.tokenIds];
  });
  expect(tokens).toEqual(expected);
}

describe('multi-turn sequences grow token by token (ManagedServer semantics)', () => {
  let engine: RunningLocalEngine;
  let qwen: Tokenizer;
  beforeAll(async () => {
    [engine, qwen] = await Promise.all([
      startLocalEngine({ model: 'generate:tiny', port: 0, slots: 2, threads: 1 }),
      loadTokenizer('qwen3'),
    ]);
  });
  afterAll(() => engine?.close());

  it('plays a 10-turn tool episode on the embedded engine; the sequence is its own tokens and template', async () => {
    const turns = 10;
    const client = completionsClient(engine.baseUrl, { stop: [' '], seed: 7 });
    const { group } = await runGroup(
      weatherTools,
      { any_turn_is_call: true, max_token_length: 400 },
      engine.baseUrl,
      { tokenizer: qwen, client, toolParser: 'hermes' },
      turns,
    );
    // One request for both first turns, then one per trajectory and turn: nothing went through chat.
    expect(client.sampled).toHaveLength(2 * turns);
    const template = new ChatTemplate(engine.engine.chatTemplate!);
    const render = (messages: Message[]) => template.render({ messages, addGenerationPrompt: true });
    for (const i of [0, 1]) {
      checkTrajectory(group, i, client.sampled, render, (s) => engine.engine.tokenize(s), qwen.eos!.id, turns);
      expect(group.messages![i]!.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(
        Array(turns - 1).fill(weatherReport('Paris')),
      );
    }
  });

  it('plays real OpenAI tool calls of a scripted model, writing back the raw text and ids it generated', async () => {
    const eos = qwen.eos!.id;
    const tokenize = (s: string) => qwen.encode(s, { addSpecialTokens: false });
    const call = (city: string) => `<tool_call>\n{"name": "get_weather", "arguments": {"city": "${city}"}}\n</tool_call>`;
    // Turn 1 has text before its call, which vLLM's hermes parser keeps with its newline (so the parsed
    // message re-renders differently), sampled one character per token (so re-tokenizing would differ).
    const preamble = 'Checking Lyon too.\n';
    const script = [
      { text: call('Paris'), ids: tokenize(call('Paris')) },
      { text: preamble + call('Lyon'), ids: [...[...preamble].flatMap(tokenize), ...tokenize(call('Lyon'))] },
      { text: 'It is 18 degrees in Paris.', ids: tokenize('It is 18 degrees in Paris.') },
    ];
    const scripted: ScriptedOpenAI = await startScriptedOpenAI({
      responder: (body) => {
        const { text, ids } = script[qwen.decode(body.prompt as number[]).split('<tool_response>').length - 1]!;
        return { choices: Array.from({ length: body.n ?? 1 }, () => ({ text, tokenIds: [...ids, eos] })) };
      },
    });
    cleanups.push(() => scripted.close());
    const client = completionsClient(scripted.baseUrl);
    const { result, group } = await runGroup(weatherTools, {}, scripted.baseUrl, { tokenizer: qwen, client, toolParser: 'hermes' });
    expect(result.scores).toEqual([1, 1]);
    const messages = group.messages![0]!;
    expect(messages[2]).toMatchObject({ content: '', tool_calls: [{ function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] });
    expect(messages[3]).toEqual({
      role: 'tool',
      tool_call_id: (messages[2]!.tool_calls as { id: string }[])[0]!.id,
      content: weatherReport('Paris'),
    });
    expect(messages[4]).toMatchObject({ content: preamble, tool_calls: [{ function: { arguments: '{"city":"Lyon"}' } }] });
    expect(messages[5]).toMatchObject({ role: 'tool', content: weatherReport('Lyon') });

    const render = (m: Message[]) => qwen.applyChatTemplate(m, { addGenerationPrompt: true });
    for (const i of [0, 1]) checkTrajectory(group, i, client.sampled, render, tokenize, eos);
    // The sequence reads as the template's conversation with the raw answers, yet is not its re-tokenization…
    const raw = messages.map((m, k) => (m.role === 'assistant' ? { role: 'assistant', content: script[(k - 2) / 2]!.text } : m));
    const history = render(raw.slice(0, -1));
    expect(qwen.decode(group.tokens[0]!)).toBe(`${history}${script[2]!.text}<|im_end|>`);
    expect(group.tokens[0]).not.toEqual([...tokenize(history), ...script[2]!.ids, eos]);
    // …and rendering the parsed calls instead of the raw text would have changed the second turn.
    expect(render(messages.slice(0, -1))).not.toBe(history);
    expect(group.inference_logprobs![0]!.filter((_, k) => group.masks[0]![k] !== MASKED)).toEqual(
      group.masks[0]!.filter((m) => m !== MASKED).map(defaultLogprob),
    );
  });

  it('fails a group whose chat template rewrites an earlier turn, naming the turn, and never retries it', async () => {
    const eos = qwen.eos!.id;
    const text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const scripted = await startScriptedOpenAI({
      responder: (body) => ({
        choices: Array.from({ length: body.n ?? 1 }, () => ({ text, tokenIds: [...qwen.encode(text, { addSpecialTokens: false }), eos] })),
      }),
    });
    cleanups.push(() => scripted.close());
    // A template that lower-cases what the assistant said before: the sequence so far no longer renders as itself.
    const rewriting = new Proxy(qwen, {
      get(target, property) {
        if (property === 'applyChatTemplate') {
          return (...args: Parameters<Tokenizer['applyChatTemplate']>) => target.applyChatTemplate(...args).replace('"Paris"', '"paris"');
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const client = completionsClient(scripted.baseUrl);
    const error = await runGroup(weatherTools, {}, scripted.baseUrl, { tokenizer: rewriting, client, toolParser: 'hermes' }).catch(
      (e: unknown) => e as Error,
    );
    const causes: string[] = [];
    for (let c: unknown = error; c instanceof Error; c = (c as { cause?: unknown }).cause) causes.push(c.message);
    expect(causes.join(' | ')).toMatch(/turn 1: the chat template does not reproduce the sequence so far/);
    // One request for the first turn of both samples, none after: a drift is not retried.
    expect(client.sampled).toHaveLength(2);
  });
});
