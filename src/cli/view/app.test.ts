import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callRecord, harnessOutcome, harnessTrajectory, writeHarnessRollout } from '../../../test/support/harness-records.js';
import { FileSystemStore } from '../../store/trajectory-store.js';
import { createViewApp } from './app.js';
import { jsonlSource } from './jsonl-source.js';
import { VIEW_SCRIPT } from './page-script.js';
import { storeSource } from './store-source.js';
import { tokenDecoders } from './tokens.js';

let dir: string;
let app: ReturnType<typeof createViewApp>;
const group = (scores: number[], answer: (i: number) => string) => ({
  tokens: scores.map(() => [5, 6, 7]),
  masks: scores.map(() => [-100, 6, 7]),
  inference_logprobs: scores.map(() => [1, -0.5, -0.25]),
  scores,
  messages: scores.map((_, i) => [
    { role: 'user', content: 'Q?' },
    { role: 'assistant', content: answer(i), reward: 0.5 },
  ]),
});

const ADD_TOOL = { type: 'function', function: { name: 'add', description: 'Adds two numbers', parameters: { type: 'object' } } };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-view-app-'));
  const lines = [group([1, 0], (i) => `answer ${i}`), { ...group([0.5], () => 'kiwi'), tools: [ADD_TOOL] }, { not: 'a group' }];
  await writeFile(join(dir, 'run.jsonl'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n\n`);
  app = createViewApp({
    runs: [jsonlSource(join(dir, 'run.jsonl'), { id: 'run.jsonl', store: null })],
    decoders: tokenDecoders(async () => null, false),
    temporalUi: { base: 'http://ui.test', namespace: 'default' },
  });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const get = async (path: string) => {
  const response = await app.request(path);
  return { status: response.status, body: (await response.json()) as Record<string, any> };
};

describe("the viewer's server", () => {
  it('serves a page whose script parses', async () => {
    const response = await app.request('/');
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toContain('<select id="run">');
    expect(() => new Function(VIEW_SCRIPT)).not.toThrow();
  });

  it("lists a run's groups with their spread, and says which lines are not groups", async () => {
    const { status, body } = await get('/api/groups?run=run.jsonl');
    expect(status).toBe(200);
    expect(body.total).toEqual({ groups: 2, rollouts: 3 });
    expect(body.groups.map((g: { id: string }) => g.id)).toEqual(['line-1', 'line-2']);
    expect(body.groups[0].spread).toEqual({ min: 0, max: 1, mean: 0.5, std: 0.5 });
    expect(body.groups[0].workflowUrl).toBeNull();
    expect(body.groups[0].rollouts[0]).not.toHaveProperty('text');
    expect(body.notices).toEqual([expect.stringMatching(/^run\.jsonl line 3: not a scored group/)]);
  });

  it('filters on the server', async () => {
    const { body } = await get('/api/groups?run=run.jsonl&q=KIWI');
    expect(body.shown).toEqual({ groups: 1, rollouts: 1 });
    expect((await get('/api/groups?run=run.jsonl&min=0.75')).body.shown).toEqual({ groups: 1, rollouts: 1 });
  });

  it('gives one rollout in full, and 404 for what is not there', async () => {
    const { status, body } = await get('/api/rollout?run=run.jsonl&group=line-1&sample=1');
    expect(status).toBe(200);
    expect(body.group).toMatchObject({ id: 'line-1', status: 'scored' });
    expect(body.rollout).toMatchObject({ sample: 1, score: 0, rewards: [0.5], parsed: null, gold: null });
    expect(body.rollout.messages.map((m: { turn: number | null }) => m.turn)).toEqual([null, 0]);
    expect(body.rollout.tokens).toEqual({ ids: [5, 6, 7], masks: [-100, 6, 7], logprobs: [1, -0.5, -0.25], pieces: null, tokenizer: null });
    expect(body.rollout.tools).toEqual([]);
    expect(body.rollout.harness).toBeNull();
    // The tools the model was offered, as the group records them.
    expect((await get('/api/rollout?run=run.jsonl&group=line-2&sample=0')).body.rollout.tools).toEqual([
      { name: 'add', description: 'Adds two numbers', parameters: '{"type":"object"}' },
    ]);
    for (const path of [
      '/api/rollout?run=run.jsonl&group=line-1&sample=2',
      '/api/rollout?run=run.jsonl&group=line-9&sample=0',
      '/api/groups?run=nope',
    ]) {
      expect((await get(path)).status).toBe(404);
    }
  });
});

describe('the viewer with a messages-only run (--env.messages_only)', () => {
  it('lists and opens its rollouts: no tokens, the completion tokens the server counted', async () => {
    const record = {
      messages_only: true,
      scores: [1, -1],
      completion_tokens: [12, 30],
      overrides: null,
      group_overrides: null,
      generation_params: null,
      messages: [
        [
          { role: 'user', content: 'Q?' },
          { role: 'assistant', content: 'yes' },
        ],
        [
          { role: 'user', content: 'Q?' },
          { role: 'assistant', content: 'no' },
        ],
      ],
      tools: [ADD_TOOL],
    };
    await writeFile(join(dir, 'messages.jsonl'), `${JSON.stringify(record)}\n`);
    const view = createViewApp({
      runs: [jsonlSource(join(dir, 'messages.jsonl'), { id: 'messages.jsonl', store: null })],
      decoders: tokenDecoders(async () => null, false),
      temporalUi: { base: 'http://ui.test', namespace: 'default' },
    });
    const read = async (path: string) => (await (await view.request(path)).json()) as Record<string, any>;
    const groups = await read('/api/groups?run=messages.jsonl');
    expect(groups.notices).toEqual([]);
    expect(groups.groups[0].rollouts.map((r: { tokens: number; messagesOnly: boolean }) => [r.tokens, r.messagesOnly])).toEqual([
      [12, true],
      [30, true],
    ]);
    const { rollout } = await read('/api/rollout?run=messages.jsonl&group=line-1&sample=1');
    expect(rollout).toMatchObject({ score: -1, messagesOnly: { completionTokens: 30 }, tokens: { ids: [], masks: [] } });
    expect(rollout.messages.map((m: { text: string }) => m.text)).toEqual(['Q?', 'no']);
    expect(rollout.tools.map((t: { name: string }) => t.name)).toEqual(['add']);
  });
});

describe('the viewer with a harness run (an agent program per rollout)', () => {
  it("shows a rollout's model calls, replayed or live, and its outcome; a running group's rollouts as far as they got", async () => {
    const store = new FileSystemStore(join(dir, 'store'));
    const address = { runId: 'agents', environment: 'bugfix', itemIndex: 0 };
    const calls = [
      callRecord(0, 'user: fix mean([])', 'THOUGHT: look'),
      callRecord(1, 'user: <returncode>0</returncode>', 'THOUGHT: edit'),
    ];
    const trajectory = harnessTrajectory([
      { role: 'user', content: 'fix mean([])' },
      { role: 'assistant', content: 'THOUGHT: look' },
      { role: 'user', content: '<returncode>0</returncode>' },
      { role: 'assistant', content: 'THOUGHT: edit' },
    ]);
    await writeHarnessRollout(store, address, 0, calls, { outcome: harnessOutcome({ calls: 2, replayed: 1 }), trajectory });
    // Rollout 1 still runs: one call so far.
    await writeHarnessRollout(store, address, 1, calls.slice(0, 1));
    const view = createViewApp({
      runs: [storeSource(store, 'agents', { id: 'agents' })],
      decoders: tokenDecoders(async () => null, false),
      temporalUi: { base: 'http://ui.test', namespace: 'default' },
    });
    const read = async (path: string) => (await (await view.request(path)).json()) as Record<string, any>;
    const groups = await read('/api/groups?run=agents');
    expect(groups.notices).toEqual([]);
    expect(groups.groups.map((g: { id: string; status: string }) => [g.id, g.status])).toEqual([['bugfix/item-0', 'unknown']]);
    expect(groups.groups[0].rollouts.map((r: { turns: number }) => r.turns)).toEqual([2, 0]);

    const done = (await read('/api/rollout?run=agents&group=bugfix/item-0&sample=0')).rollout;
    expect(done.messages).toHaveLength(4);
    expect(done.harness.outcome).toMatchObject({ agent: 'bash', calls: 2, replayed: 1, check: { passed: true } });
    expect(done.harness.calls).toEqual([
      {
        call: 0,
        mark: 'replayed',
        summary: 'user: fix mean([])',
        promptTokens: 100,
        completionTokens: 2,
        modelMs: 10,
        reply: 'THOUGHT: look',
      },
      {
        call: 1,
        mark: 'live',
        summary: 'user: <returncode>0</returncode>',
        promptTokens: 150,
        completionTokens: 2,
        modelMs: 20,
        reply: 'THOUGHT: edit',
      },
    ]);
    const running = (await read('/api/rollout?run=agents&group=bugfix/item-0&sample=1')).rollout;
    expect(running.messages).toEqual([]);
    expect(running.harness).toMatchObject({ sample: 1, outcome: null, calls: [{ call: 0, mark: 'recorded' }] });
  });
});
