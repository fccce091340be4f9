import { readFile } from 'node:fs/promises';
import { describe, expect, inject, it } from 'vitest';
import type { Message } from '../../src/schema/scored-data.js';
import { apiClient, startApiProcess } from '../support/api-process.js';
import { runClotho } from '../support/cli.js';
import { readJsonl } from '../support/groups.js';
import { gsm8kResponder } from '../support/gsm8k-model.js';
import { runProcess, temporalEnv, useScratch } from '../support/runs.js';
import { assistantTurns, encodeCompletion, startScriptedOpenAI, type Responder, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { CAREFUL, SLOPPY, toolUseAgent } from '../support/tool-models.js';

/**
 * `clotho process --env.messages_only` against a server that answers with messages only (no token ids, no logprobs:
 * OpenAI's API and most hosted ones): what it writes, who reads it, and who refuses it (issue 23, point 9).
 */

const scratch = useScratch('clotho-messages-only-');
/** The scripted server as a hosted API answers: neither token ids nor logprobs, whatever is asked. */
const BARE = { tokenIds: false, logprobs: false } as const;
const model = async (responder: Responder) => scratch.closeAfter(await startScriptedOpenAI({ responder, ...BARE }));

type Record = { [key: string]: unknown; scores: number[]; messages: Message[][]; completion_tokens: number[] | null };
const text = (m: Message | undefined) => String(m?.content ?? '');
const assistants = (messages: Message[]) => messages.filter((m) => m.role === 'assistant');
/** Tokens the scripted server counts for a conversation's assistant turns (its usage.completion_tokens). */
const counted = (messages: Message[]) =>
  assistants(messages).reduce((sum, m) => sum + encodeCompletion(text(m), m.tool_calls as unknown[] | undefined).length, 0);
const chats = (server: ScriptedOpenAI) =>
  server.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as { [key: string]: unknown; messages: Message[] });

/** Nothing a hosted API refuses or a messages-only server ignores: vLLM's return_token_ids, logprobs. */
function expectMessagesOnlyRequests(server: ScriptedOpenAI): void {
  for (const body of chats(server)) {
    expect(body).not.toHaveProperty('return_token_ids');
    expect(body).not.toHaveProperty('logprobs');
  }
}

const RECORD_KEYS = ['completion_tokens', 'generation_params', 'group_overrides', 'messages', 'messages_only', 'overrides', 'scores'];

describe('clotho process --env.messages_only', () => {
  const gsm8kOut = () => scratch.path('gsm8k.jsonl');

  it('gsm8k: writes messages-only records (no tokens or masks) and an HTML page of them; sft-gen and dpo-gen write their messages', async () => {
    const server = await model(gsm8kResponder((_, sample) => sample === 0));
    await runProcess(
      [
        'gsm8k',
        '--env.split',
        'test',
        '--env.total_steps',
        '2',
        '--env.group_size',
        '2',
        '--env.messages_only',
        'true',
        '--openai.base_url',
        server.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      gsm8kOut(),
      2,
    );
    expectMessagesOnlyRequests(server);
    // One request per group: its samples share the prompt.
    expect(chats(server)).toHaveLength(2);

    const records = await readJsonl<Record>(gsm8kOut());
    for (const record of records) {
      expect(Object.keys(record).sort()).toEqual(RECORD_KEYS);
      expect(record).toMatchObject({
        messages_only: true,
        scores: [1, -1],
        overrides: null,
        generation_params: { temperature: 1, top_p: 1 },
      });
      // The server's usage counts the group's two choices together: no count of each sequence's own.
      expect(record.completion_tokens).toBeNull();
      const [right, wrong] = record.messages.map((m) => m.at(-1)!);
      expect(right).toMatchObject({ role: 'assistant' });
      expect(text(right)).toContain('The answer is \\boxed{');
      expect(text(wrong)).toMatch(/^I think it is \\boxed\{/);
      for (const messages of record.messages) expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
    }

    const html = await readFile(scratch.path('gsm8k.html'), 'utf8');
    expect(html).toContain('2 groups');
    expect(html).toContain('scores 1, -1 · messages only (no tokens: not training data)');
    expect(html).toContain('sample 0 · score 1 · 1 turns · completion tokens not counted per sequence');

    // SFT from the messages: the right answers, as messages.
    const sft = scratch.path('sft.jsonl');
    const made = await runClotho(['sft-gen', sft, '--from', gsm8kOut()]);
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    const sftRecords = await readJsonl<{ messages: Message[]; score: number }>(sft);
    expect(sftRecords.map((r) => r.score)).toEqual([1, 1]);
    expect(sftRecords.map((r) => r.messages)).toEqual(records.map((r) => r.messages[0]));
    const dpo = scratch.path('dpo.jsonl');
    expect((await runClotho(['dpo-gen', dpo, '--from', gsm8kOut(), '--minimum-score-diff-max-min', '0'])).code).toBe(0);
    expect(await readJsonl<{ pos: Message[]; neg: Message[] }>(dpo)).toEqual(
      records.map((r) => ({ pos: r.messages[0], score: 1, neg: r.messages[1] })),
    );
    // Decoded tokens need tokens: said so, and nothing is written.
    const decoded = await runClotho(['sft-gen', scratch.path('text.jsonl'), '--from', gsm8kOut(), '--tokenizer', 'qwen3']);
    expect(decoded.code).toBe(1);
    expect(decoded.stderr).toContain(
      "--tokenizer writes each sequence's decoded tokens, and a messages-only group (clotho process " +
        '--env.messages_only) has no token ids, masks or logprobs',
    );
    expect(decoded.stderr).toContain('leave out --tokenizer (or pass --save-messages) to write its messages');
  });

  it('clotho api refuses a messages-only record with a 422 that says why', async () => {
    const [record] = await readJsonl<Record>(gsm8kOut());
    const api = await startApiProcess({ temporalAddress: inject('temporalAddress') });
    try {
      const client = apiClient(api.url);
      const why =
        'a messages-only group (clotho process --env.messages_only) has no token ids, masks or logprobs, so it is ' +
        'no ScoredDataGroup and no trainer can learn from it; post groups with tokens and masks (clotho process without --env.messages_only)';
      const one = await client.post('/scored_data', record);
      expect(one.status).toBe(422);
      expect(one.json).toEqual({ detail: [{ loc: ['body', 'messages_only'], msg: why, type: 'value_error' }] });
      const list = await client.post('/scored_data_list', [record, record]);
      expect(list.status).toBe(422);
      expect(list.json.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([
        ['body', 0, 'messages_only'],
        ['body', 1, 'messages_only'],
      ]);
      // Nothing reached the queue.
      expect((await client.get('/metrics')).text).toMatch(/^clotho_queue_depth 0$/m);
    } finally {
      await api.stop();
    }
  });

  it("tool_use: several turns of executed tools, each budget counted from the server's usage; the tools offered are kept", async () => {
    // The scripted agent tells its samples apart by their index in one request; asked one sample at a time, the first
    // request of a question is the careful sample and the second the sloppy one.
    const firsts = new Map<string, number>();
    const agent: Responder = async (body, call) => {
      if (assistantTurns(body) > 0) return toolUseAgent(body, call);
      const question = text(('messages' in body ? (body.messages as Message[]) : []).find((m) => m.role === 'user'));
      const seen = firsts.get(question) ?? 0;
      firsts.set(question, seen + 1);
      const both = await toolUseAgent({ ...body, n: 2 }, call);
      return 'choices' in both ? { choices: [both.choices[seen]!] } : both;
    };
    const server = await model(agent);
    const MAX = 4096;
    await runProcess(
      [
        'tool_use',
        '--env.kinds',
        '["province_sum","codes"]',
        '--env.hops',
        '2',
        '--env.total_steps',
        '2',
        '--env.group_size',
        '2',
        '--env.max_token_length',
        String(MAX),
        '--env.messages_only',
        'true',
        '--openai.base_url',
        server.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('tool_use.jsonl'),
      2,
    );
    expectMessagesOnlyRequests(server);
    // Each sample alone on every turn, its budget what the server counted of its turns so far.
    for (const body of chats(server)) expect(body.max_tokens).toBe(MAX - counted(body.messages));
    expect(chats(server).filter((b) => assistants(b.messages).length === 0)).toHaveLength(4);

    const records = await readJsonl<Record>(scratch.path('tool_use.jsonl'));
    for (const record of records) {
      expect(Object.keys(record).sort()).toEqual([...RECORD_KEYS, 'tools'].sort());
      expect((record.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual([
        'calculator',
        'kv_get',
        'kv_set',
        'kv_list',
        'search',
        'lookup',
      ]);
      const careful = record.messages.findIndex((m) => text(assistants(m)[0]).startsWith(CAREFUL));
      const sloppy = record.messages.findIndex((m) => text(assistants(m)[0]).startsWith(SLOPPY));
      expect([careful, sloppy].sort()).toEqual([0, 1]);
      expect(record.scores[careful]).toBe(1);
      expect(record.scores[sloppy]).toBe(-1);
      expect(assistants(record.messages[careful]!)).toHaveLength(4);
      expect(assistants(record.messages[sloppy]!)).toHaveLength(5);
      expect(record.messages[careful]!.filter((m) => m.role === 'tool').length).toBeGreaterThanOrEqual(4);
      expect(record.completion_tokens).toEqual(record.messages.map(counted));
      expect(record.overrides).toBeNull();
    }
    const html = await readFile(scratch.path('tool_use.html'), 'utf8');
    expect(html).toContain('turn 1 · tool · lookup');
    for (const record of records) {
      record.scores.forEach((score, i) => expect(html).toContain(`score ${score} · ${assistants(record.messages[i]!).length} turns`));
      for (const tokens of record.completion_tokens!) expect(html).toContain(` · ${tokens} completion tokens`);
    }
  });

  it('tool_use: an episode whose counted tokens reach max_token_length ends truncated after that turn', async () => {
    const server = await model(toolUseAgent);
    await runProcess(
      [
        'tool_use',
        '--env.kinds',
        '["codes"]',
        '--env.hops',
        '2',
        '--env.total_steps',
        '1',
        '--env.group_size',
        '1',
        '--env.max_token_length',
        '8',
        '--env.messages_only',
        'true',
        '--openai.base_url',
        server.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('truncated.jsonl'),
      1,
    );
    // One turn, asked for with the whole budget; its reply counts more than that, so the episode ends there.
    expect(chats(server).map((b) => b.max_tokens)).toEqual([8]);
    const [record] = await readJsonl<Record>(scratch.path('truncated.jsonl'));
    expect(assistants(record!.messages[0]!)).toHaveLength(1);
    expect(record!.completion_tokens![0]).toBeGreaterThanOrEqual(8);
    expect(record!.overrides).toEqual([{ set_advantage_to_zero: true }]);
  });
});

describe('clotho serve --env.messages_only', () => {
  it('is refused before anything starts: serve feeds a trainer, which needs tokens', async () => {
    const { code, stdout, stderr } = await runClotho(
      [
        'serve',
        'gsm8k',
        '--env.split',
        'test',
        '--env.messages_only',
        'true',
        '--openai.base_url',
        'http://127.0.0.1:9/v1',
        '--store',
        scratch.path('serve-store'),
      ],
      temporalEnv(),
    );
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'clotho serve: --env.messages_only: clotho serve feeds a trainer, and a trainer needs token ids, masks and ' +
        'logprobs; a messages-only run is for evaluation or SFT data: run it with clotho process\n',
    );
  });

  it('--help describes the flag', async () => {
    const { code, stdout } = await runClotho(['process', 'gsm8k', '--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/--env\.messages_only true or false +ask servers for messages only \(no token ids, no logprobs/);
  });
});
