import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { groupKey, saveGroupBase, saveGroupDelta, type GroupState } from '../../src/activities/group-state.js';
import type { ChatMessage } from '../../src/inference/chat-template.js';
import { loadTokenizer, type Tokenizer } from '../../src/inference/tokenizer.js';
import { MASKED, MASKED_LOGPROB, ScoredDataGroupSchema, type Message, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { repoRoot } from '../../src/store/paths.js';
import { FileSystemStore } from '../../src/store/trajectory-store.js';
import { apiClient, startApiProcess, TRAINER } from '../support/api-process.js';
import { runClotho, startClothoView, waitFor, type CliRun } from '../support/cli.js';
import { gsm8kItems, gsm8kResponder, gsm8kCommand } from '../support/gsm8k-model.js';
import { defaultLogprob, encodeChat, encodeCompletion, startScriptedOpenAI } from '../support/scripted-openai.js';
import { testConnection, uniqueId } from '../support/temporal.js';

/** Debian's package, installed by scripts/ensure-chromium.mjs (playwright's own browser download is not used). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOT = join(repoRoot, '.clotho/test-results/view.png');
const TEMPORAL_UI = 'http://temporal.test:8233';

let dir: string;
let browser: Browser;
const children: CliRun[] = [];
beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run \`node scripts/ensure-chromium.mjs\` (or set CHROMIUM_PATH)`);
  dir = await mkdtemp(join(tmpdir(), 'clotho-view-'));
  browser = await chromium.launch({ executablePath: CHROMIUM });
});
afterAll(async () => {
  await browser?.close();
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

// --- fixtures: groups in Atropos's format, tokens from a real tokenizer (JSONL) or the scripted one (store) ---------

const QUESTION = 'How many stripes does the Zebra in the passage have?';
const toolCall = (id: string, title: string) => ({
  id,
  type: 'function',
  function: { name: 'lookup', arguments: JSON.stringify({ title }) },
});

/** A multi-turn tool episode: a lookup (OpenAI tool call), its result, then the boxed answer; a reward per turn. */
function toolEpisode(result: string, answer: number, firstReward: number): Message[] {
  return [
    { role: 'system', content: 'You may call lookup(title) to read a passage.' },
    { role: 'user', content: QUESTION },
    { role: 'assistant', content: 'Let me look it up.', tool_calls: [toolCall('call-1', 'Zebra')], reward: firstReward },
    { role: 'tool', tool_call_id: 'call-1', name: 'lookup', content: result },
    { role: 'assistant', content: `The passage says \\boxed{${answer}}.`, reward: 0 },
  ];
}

/** Token ids of a conversation as Qwen's template lays it out: assistant text trained, everything else masked. */
function qwenSequence(tokenizer: Tokenizer, messages: Message[]) {
  const tokens: number[] = [];
  const masks: number[] = [];
  const logprobs: number[] = [];
  const add = (ids: number[], trained: boolean) => {
    ids.forEach((id, i) => {
      tokens.push(id);
      masks.push(trained ? id : MASKED);
      logprobs.push(trained ? -((i % 7) / 4) : MASKED_LOGPROB);
    });
  };
  const first = messages.findIndex((m) => m.role === 'assistant');
  add(tokenizer.encodeChat(messages.slice(0, first) as ChatMessage[], { addGenerationPrompt: true }), false);
  for (const m of messages.slice(first)) {
    const text = String(m.content ?? '');
    if (m.role === 'assistant') add(tokenizer.encode(`${text}<|im_end|>`, { addSpecialTokens: false }), true);
    else add(tokenizer.encode(`\n<|im_start|>${m.role}\n${text}<|im_end|>\n<|im_start|>assistant\n`, { addSpecialTokens: false }), false);
  }
  return { tokens, masks, logprobs };
}

function scoredGroup(
  tokenizer: Tokenizer,
  rollouts: { messages: Message[]; score: number }[],
  groupOverrides: Record<string, unknown> | null = null,
): ScoredDataGroup {
  const sequences = rollouts.map((r) => qwenSequence(tokenizer, r.messages));
  return ScoredDataGroupSchema.parse({
    tokens: sequences.map((s) => s.tokens),
    masks: sequences.map((s) => s.masks),
    inference_logprobs: sequences.map((s) => s.logprobs),
    scores: rollouts.map((r) => r.score),
    messages: rollouts.map((r) => r.messages),
    group_overrides: groupOverrides,
  });
}

const math = (answer: string): Message[] => [
  { role: 'user', content: 'What is 6 times 7?' },
  { role: 'assistant', content: answer },
];
const fruit = (text: string): Message[] => [
  { role: 'user', content: 'Name a fruit.' },
  { role: 'assistant', content: text },
];

/** Three groups, seven rollouts; the tool episode's group is also in the store, as `clotho process` leaves it. */
async function writeJsonl(tokenizer: Tokenizer, store: FileSystemStore): Promise<string> {
  const episode = scoredGroup(
    tokenizer,
    [
      { messages: toolEpisode('The Zebra passage: it has 24 black bands.', 24, 0.1), score: 1 },
      { messages: toolEpisode('Error: no passage titled "Zebra"', 23, -0.1), score: -0.5 },
    ],
    { gold: 24 },
  );
  const groups = [
    scoredGroup(tokenizer, [
      { messages: math('6 × 7 = \\boxed{42}.'), score: 1 },
      { messages: math('I think \\boxed{41}.'), score: -1 },
    ]),
    episode,
    scoredGroup(
      tokenizer,
      [0.25, 0.5, 0.75].map((score, i) => ({ messages: fruit(`A banana, ripe to degree ${i}.`), score })),
    ),
  ];
  const address = { runId: 'proc-run', environment: 'tool_env', itemIndex: 5 };
  await store.put(groupKey(address, 'group'), episode);
  await store.put(groupKey(address, 'parsed'), [24, 23]);
  const path = join(dir, 'groups.jsonl');
  await writeFile(path, groups.map((g) => `${JSON.stringify(g)}\n`).join(''));
  return path;
}

/** A guessing game's trajectory in the scripted model's tokens (code points), as the workflow's state holds it. */
function guessTrajectory(guess: string) {
  const prompt = encodeChat([{ role: 'user', content: 'Guess my number.' }]);
  const completion = encodeCompletion(guess);
  return {
    messages: [
      { role: 'user', content: 'Guess my number.' },
      { role: 'assistant', content: guess },
    ],
    tokens: [...prompt, ...completion],
    masks: [...prompt.map(() => MASKED), ...completion],
    logprobs: [...prompt.map(() => MASKED_LOGPROB), ...completion.map(defaultLogprob)],
    completionTokens: completion.length,
    finishReason: 'stop',
    done: true,
  };
}

/**
 * Run `view-run` of a guessing game: item 0 assembled (scored, its gold in the group's overrides), item 1 parsed but
 * never assembled (its records end at the generated turn, as for a dropped or failed group).
 */
async function writeStoreRun(store: FileSystemStore): Promise<void> {
  const scored = { runId: 'view-run', environment: 'guess', itemIndex: 0 };
  const a = guessTrajectory('It is 17.');
  const b = guessTrajectory('Maybe 3?');
  await store.put(
    groupKey(scored, 'group'),
    ScoredDataGroupSchema.parse({
      tokens: [a.tokens, b.tokens],
      masks: [a.masks, b.masks],
      inference_logprobs: [a.logprobs, b.logprobs],
      scores: [1, -1],
      messages: [a.messages, b.messages],
      group_overrides: { gold: 17 },
    }),
  );
  await store.put(groupKey(scored, 'parsed'), [17, 3]);

  const unfinished = { runId: 'view-run', environment: 'guess', itemIndex: 1 };
  const prompt: GroupState = {
    itemIndex: 1,
    groupOverrides: null,
    tools: null,
    stop: null,
    trajectories: [0, 1].map(() => ({
      messages: [{ role: 'user', content: 'Guess my number.' }],
      tokens: [],
      masks: [],
      logprobs: [],
      completionTokens: 0,
      finishReason: null,
      done: false,
    })),
  };
  const base = await saveGroupBase(store, groupKey(unfinished, 'turn-0', 'prompt'), prompt);
  const generated: GroupState = { ...prompt, trajectories: [guessTrajectory('Seven.'), guessTrajectory('Seven!')] };
  await saveGroupDelta(store, groupKey(unfinished, 'turn-0', 'generated'), base, prompt, generated);
  await store.put(groupKey(unfinished, 'parsed'), [7, 7]);
}

// --- the page -----------------------------------------------------------------------------------------------------

/** Starts `clotho view` and waits for the address it listens on. */
const startView = (args: string[], env: Record<string, string> = {}) => startClothoView(args, env, children);

/** Waits until the list shows the answer to the filters `query` (the page's own record of what it loaded). */
async function listed(page: Page, query: string): Promise<{ groups: number; rollouts: number; summary: string }> {
  // A string, run in the page: this file is type-checked for Node, without the DOM's types.
  await page.waitForFunction(
    `(() => { const s = document.querySelector('#summary'); return s.dataset.state === 'ready' && s.dataset.query === ${JSON.stringify(query)}; })()`,
  );
  const summary = (await page.textContent('#summary'))!;
  return { groups: await page.locator('[data-group]').count(), rollouts: await page.locator('[data-rollout]').count(), summary };
}

async function openRollout(page: Page, key: string): Promise<void> {
  await page.click(`[data-rollout="${key}"]`);
  await page.waitForSelector(`#rollout[data-key="${key}"]`);
}

describe('clotho view', () => {
  it('browses a JSONL and a store run: messages, tool calls, rewards, answers, tokens, links and filters', async () => {
    const store = new FileSystemStore(join(dir, 'store'));
    const jsonl = await writeJsonl(await loadTokenizer('qwen3'), store);
    await writeStoreRun(store);
    const url = await startView([jsonl, '--run', 'view-run', '--store', store.root, '--no-temporal', '--temporal-ui', TEMPORAL_UI]);
    const page = await browser.newPage({ viewport: { width: 1360, height: 1000 } });
    await page.goto(url);

    // The JSONL comes first: every group and rollout listed, each group with its score spread.
    expect(await listed(page, '')).toEqual({ groups: 3, rollouts: 7, summary: 'Showing 3 of 3 groups · 7 of 7 rollouts' });
    expect(await page.textContent('[data-group="line-3"] .spread-text')).toBe('0.25 … 0.75 · mean 0.5 ± 0.204');
    expect(await page.textContent('[data-group="line-2"] .label')).toBe('line 2 · proc-run · tool_env item 5');

    // The tool episode, turn by turn: the call, its result, the per-turn rewards, answers and its workflow's link.
    await openRollout(page, 'line-2#0');
    const detail = page.locator('#rollout');
    expect(await detail.locator('.msg.user pre').textContent()).toBe(QUESTION);
    expect(await detail.locator('.tool-call').first().textContent()).toBe('→ lookup({"title":"Zebra"})');
    expect(await detail.locator('.msg.tool h3').textContent()).toBe('turn 0 · tool · lookup · call-1');
    expect(await detail.locator('.msg.tool pre').textContent()).toBe('The Zebra passage: it has 24 black bands.');
    expect(await detail.locator('.msg.assistant h3').allTextContents()).toEqual([
      'turn 0 · assistant · reward 0.1',
      'turn 1 · assistant · reward 0',
    ]);
    expect(await detail.locator('[data-fact=score]').textContent()).toBe('1');
    expect(await detail.locator('[data-fact=rewards]').textContent()).toBe('0.1, 0');
    expect(await detail.locator('[data-fact=parsed]').textContent()).toBe('24');
    expect(await detail.locator('[data-fact=gold]').textContent()).toBe('24 (group_overrides.gold)');
    expect(await page.getAttribute('#workflow-link', 'href')).toBe(
      `${TEMPORAL_UI}/namespaces/default/workflows/clotho%2Fproc-run%2Ftool_env%2Fitem-5`,
    );
    // Tokens decoded with Qwen's tokenizer (the run's text comes back from its ids), trained spans apart from masked.
    expect(await detail.locator('.tokens').getAttribute('data-decoded')).toBe('yes');
    expect(await detail.locator('.seg.trained').first().textContent()).toContain('Let me look it up.');
    expect(await detail.locator('.seg.masked').first().textContent()).toContain(QUESTION);
    expect(await detail.locator('.seg.masked').nth(1).textContent()).toContain('24 black bands');
    expect(await detail.locator('.seg.trained .tok[style]').count()).toBe(await detail.locator('.seg.trained .tok').count());
    await mkdir(join(repoRoot, '.clotho/test-results'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: false });

    // A group that is only in the JSONL has no workflow to link to, and says why.
    await openRollout(page, 'line-1#1');
    expect(await page.locator('#workflow-link').count()).toBe(0);
    expect(await detail.locator('[data-fact=gold]').textContent()).toBe('not recorded');

    // Score range: the rollouts from 0.4 to 0.8, and only the groups that have one.
    await page.fill('input[name=min]', '0.4');
    await page.fill('input[name=max]', '0.8');
    expect(await listed(page, 'min=0.4&max=0.8')).toMatchObject({
      groups: 1,
      rollouts: 2,
      summary: 'Showing 1 of 3 groups · 2 of 7 rollouts',
    });
    expect(await page.locator('[data-rollout="line-3#0"]').count()).toBe(0);
    expect(await page.locator('[data-rollout="line-3#2"]').count()).toBe(1);

    // Text: in messages and tool results, case-insensitively.
    await page.fill('input[name=min]', '');
    await page.fill('input[name=max]', '');
    await page.fill('input[name=q]', 'BLACK BANDS');
    expect(await listed(page, 'q=BLACK+BANDS')).toMatchObject({ groups: 1, rollouts: 1 });
    expect(await page.locator('[data-rollout="line-2#0"]').count()).toBe(1);
    await page.fill('input[name=q]', 'zebra');
    expect(await listed(page, 'q=zebra')).toMatchObject({ groups: 1, rollouts: 2 });
    await page.fill('input[name=q]', '');
    await listed(page, '');

    // The store's run: the scored group and the one never assembled, by status; tokens as ids (scripted model).
    await page.selectOption('#run', 'view-run');
    expect(await listed(page, '')).toMatchObject({ groups: 2, rollouts: 4 });
    expect(await page.getAttribute('[data-group="guess/item-1"]', 'data-status')).toBe('unknown');
    expect(await page.textContent('[data-group="guess/item-1"] .note')).toContain('Temporal was not reachable');
    expect(await page.locator('select[name=env] option').allTextContents()).toEqual(['all', 'guess']);
    await page.uncheck('input[name=status][value=unknown]');
    expect(await listed(page, `status=${encodeURIComponent('scored,dropped,failed,running')}`)).toMatchObject({ groups: 1, rollouts: 2 });
    await openRollout(page, 'guess/item-0#0');
    expect(await detail.locator('.tokens').getAttribute('data-decoded')).toBe('no');
    expect(await detail.locator('.seg.trained .tok').first().textContent()).toBe(String('I'.codePointAt(0)));
    expect(await detail.locator('.seg.masked .caption').first().textContent()).toMatch(/^not trained \(mask -100\)/);
    expect(await detail.locator('[data-fact=parsed]').textContent()).toBe('17');
    expect(await detail.locator('[data-fact=gold]').textContent()).toBe('17 (group_overrides.gold)');
    expect(await page.getAttribute('#workflow-link', 'href')).toBe(
      `${TEMPORAL_UI}/namespaces/default/workflows/clotho%2Fview-run%2Fguess%2Fitem-0`,
    );
    await page.check('input[name=status][value=unknown]');
    await listed(page, '');
    await openRollout(page, 'guess/item-1#1');
    expect(await detail.locator('.msg.assistant pre').textContent()).toBe('Seven!');
    expect(await detail.locator('[data-fact=score]').textContent()).toBe('—');
    await page.close();
    // Ctrl-C or SIGTERM stops the server, and the command ends cleanly.
    const view = children.at(-1)!;
    view.child.kill('SIGTERM');
    expect(await view.exited).toBe(0);
  });

  it("shows a real run's dropped and failed groups from Temporal's visibility, with why each ended so", async () => {
    // Item 0: both samples right, so the group is dropped (equal scores); item 1: the model refuses (a 400, not
    // retried), so the group fails; the others score 1 and -1.
    const questions = gsm8kItems().map((item) => item.question);
    const mixed = gsm8kResponder((item, sample) => item === 0 || sample === 0);
    const model = await startScriptedOpenAI({
      responder: (body, call) => {
        const user = (('messages' in body ? body.messages : []) as { role: string; content?: unknown }[]).find((m) => m.role === 'user');
        if (user?.content === questions[1]) return { status: 400, body: { error: { message: 'scripted refusal of item 1' } } };
        return mixed(body, call);
      },
    });
    try {
      const runId = uniqueId('view');
      const temporal = { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') };
      const store = join(dir, 'run-store');
      const processed = await runClotho(
        gsm8kCommand('process', model.baseUrl, {
          'env.total_steps': 4,
          'env.group_size': 2,
          'env.run_id': runId,
          'env.ensure_scores_are_not_same': true,
          store,
          'env.data_path_to_save_groups': join(dir, `${runId}.jsonl`),
        }),
        temporal,
      );
      expect(processed.stderr).toContain('item 1 failed');
      // Visibility trails the workflows a little: wait until it lists items 0 and 1 as they ended.
      const { client } = await testConnection();
      await waitFor(
        async () => {
          const ended = new Map<string, string>();
          for await (const w of client.workflow.list({ query: `ClothoRunId = "${runId}" AND WorkflowType = "rolloutGroup"` })) {
            ended.set(w.workflowId, w.status.name);
          }
          return ended.get(`clotho/${runId}/gsm8k/item-0`) === 'COMPLETED' && ended.get(`clotho/${runId}/gsm8k/item-1`) === 'FAILED';
        },
        30_000,
        'visibility to list the ended groups',
      );

      const url = await startView(['--run', runId, '--store', store, '--tokenizer', 'none'], temporal);
      const page = await browser.newPage();
      await page.goto(url);
      await listed(page, '');
      expect(await page.getAttribute('[data-group="gsm8k/item-0"]', 'data-status')).toBe('dropped');
      expect(await page.textContent('[data-group="gsm8k/item-0"] .note')).toBe('scores_all_equal');
      expect(await page.getAttribute('[data-group="gsm8k/item-1"]', 'data-status')).toBe('failed');
      expect(await page.textContent('[data-group="gsm8k/item-1"] .note')).toContain('scripted refusal of item 1');
      expect(await page.getAttribute('[data-group="gsm8k/item-2"]', 'data-status')).toBe('scored');

      // Status filter: the failed group alone; its prompt is there, its (never generated) answers are not.
      for (const status of ['scored', 'dropped', 'running', 'unknown']) await page.uncheck(`input[name=status][value=${status}]`);
      expect(await listed(page, 'status=failed')).toMatchObject({ groups: 1 });
      await openRollout(page, 'gsm8k/item-1#0');
      expect(await page.textContent('#rollout .msg.user pre')).toBe(questions[1]);
      expect(await page.locator('#rollout .msg.assistant').count()).toBe(0);

      // The dropped group kept its rollouts and its (equal) scores, from its workflow's search attributes.
      await page.check('input[name=status][value=dropped]');
      await page.uncheck('input[name=status][value=failed]');
      expect(await listed(page, 'status=dropped')).toMatchObject({ groups: 1, rollouts: 2 });
      await openRollout(page, 'gsm8k/item-0#1');
      expect(await page.textContent('#rollout [data-fact=score]')).toBe('1');
      expect(await page.textContent('#rollout .msg.assistant pre')).toContain(`\\boxed{${gsm8kItems()[0]!.answer}}`);
      expect(await page.getAttribute('#workflow-link', 'href')).toBe(
        `http://127.0.0.1:8233/namespaces/${temporal.TEMPORAL_NAMESPACE}/workflows/${encodeURIComponent(`clotho/${runId}/gsm8k/item-0`)}`,
      );
      await page.close();
    } finally {
      await model.close();
    }
  });

  it('browses the groups waiting in a running clotho api, live, and the trainer still gets every one of them', async () => {
    const api = await startApiProcess({ temporalAddress: inject('temporalAddress'), args: ['--token', 'view-secret'] });
    try {
      const auth = { authorization: 'Bearer view-secret' };
      const http = apiClient(api.url);
      const get = (path: string) => http.call('GET', path, undefined, auth);
      expect((await http.post('/register', { ...TRAINER, batch_size: 8 }, auth)).status).toBe(200);
      /** A group of two rollouts answering question `tag`, tagged by its first token. */
      const posted = (tag: number) => ({
        tokens: [
          [tag, 101, 102],
          [tag, 201, 202],
        ],
        masks: [
          [-100, 101, 102],
          [-100, 201, 202],
        ],
        scores: [1, -1],
        messages: [0, 1].map((i) => [
          { role: 'user', content: `Question ${tag}?` },
          { role: 'assistant', content: `Answer ${tag}.${i}` },
        ]),
        env_id: null,
        policy_version: 2,
        idempotency_key: `wait-${tag}`,
      });
      expect((await http.post('/scored_data_list', [1, 2, 3].map(posted), auth)).json).toEqual({ status: 'received', groups_processed: 3 });

      const url = await startView(['--api', api.url, '--token', 'view-secret', '--tokenizer', 'none']);
      const page = await browser.newPage();
      await page.goto(url);
      expect(await listed(page, '')).toMatchObject({ groups: 3, rollouts: 6 });
      expect(await page.textContent('#origin')).toBe(`${api.url} · groups waiting for the trainer`);
      expect(await page.textContent('[data-group="wait-2"] .label')).toMatch(/^wait-2 · no env · policy 2 · received \d\d:\d\d:\d\d UTC$/);
      await openRollout(page, 'wait-2#1');
      expect(await page.textContent('#rollout .msg.user pre')).toBe('Question 2?');
      expect(await page.textContent('#rollout .msg.assistant pre')).toBe('Answer 2.1');
      expect(await page.textContent('#rollout [data-fact=score]')).toBe('-1');

      // Reload reads the queue again: a group posted since is there; looking took none from the trainer.
      await http.post('/scored_data', posted(4), auth);
      await page.click('#reload');
      expect(await listed(page, '')).toMatchObject({ groups: 4, rollouts: 8 });
      expect((await get('/status')).json).toEqual({ current_step: 0, queue_size: 4 });
      const batch = (await get('/batch')).json.batch as { tokens: number[][]; messages: { content: string }[][] }[];
      expect(batch.map((g) => g.tokens[0]![0]).sort()).toEqual([1, 2, 3, 4]);
      expect(batch.find((g) => g.tokens[0]![0] === 2)!.messages[1]![1]!.content).toBe('Answer 2.1');

      // Taken by the trainer, they wait no more.
      await page.click('#reload');
      expect(await listed(page, '')).toMatchObject({ groups: 0, rollouts: 0 });
      expect(await page.textContent('#notices')).toContain(`no groups wait for the trainer in ${api.url}`);
      await page.close();
    } finally {
      await api.stop();
    }
  });
});
