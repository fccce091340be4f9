import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { generateTask, type ToolUseTask } from '../../environments/tool_use/tasks.js';
import { parseToolCalls } from '../../src/inference/tool-calls.js';
import { loadTokenizer } from '../../src/inference/tokenizer.js';
import type { Message, ScoredDataGroup } from '../../src/schema/scored-data.js';
import { apiClient, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { spawnClotho, waitFor, type CliRun } from '../support/cli.js';
import { expectWellFormedGroup, expectWellFormedSequence } from '../support/groups.js';
import { processEngineGroup, runEvaluate, runProcess, useScratch } from '../support/runs.js';
import { encodeCompletion, startScriptedOpenAI } from '../support/scripted-openai.js';
import {
  BFCL_DIR,
  bfclItems,
  bfclResponder,
  CAREFUL,
  firstBfclIds,
  MISSING_TITLE,
  rightCalls,
  SLOPPY,
  toolUseAgent,
  type BfclAnswer,
} from '../support/tool-models.js';
import { uniqueId } from '../support/temporal.js';

const text = (m: Message | undefined) => String(m?.content ?? '');
const userText = (messages: Message[]) => text(messages.find((m) => m.role === 'user'));

// Registered first, so its folder and models go after the hook below has stopped the processes that use them.
const scratch = useScratch('clotho-tool-envs-');
const children: CliRun[] = [];
let api: ApiProcess | undefined;
afterAll(async () => {
  for (const child of children) if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGKILL');
  await api?.stop();
});
const model = async (options: Parameters<typeof startScriptedOpenAI>[0]) => scratch.closeAfter(await startScriptedOpenAI(options));

// --- tool_calling ------------------------------------------------------------------------------------------------

/** In `process` and `serve`: sample 0 right, sample 1 wrong in the way its category invites. */
const WRONG: Record<string, BfclAnswer> = {
  simple: 'extra_param',
  multiple: 'wrong_function',
  parallel: 'malformed',
  parallel_multiple: 'partial',
};
const trainingPlan = (id: string, sample: number): BfclAnswer =>
  sample === 0 ? (id.includes('multiple') ? 'right_hermes' : 'right_openai') : WRONG[bfclItems().get(id)!.category]!;

/** In `evaluate` (one greedy answer per item): five of the first eight right, three wrong in three ways. */
const EVAL_PLAN: Record<string, BfclAnswer> = {
  simple_python_0: 'right_openai',
  multiple_0: 'right_hermes',
  parallel_0: 'malformed',
  parallel_multiple_0: 'right_openai',
  simple_python_1: 'right_hermes',
  multiple_1: 'right_openai',
  parallel_1: 'partial',
  parallel_multiple_1: 'no_call',
};

/** Names of the calls an assistant message makes, OpenAI `tool_calls` or Hermes blocks. */
const callNames = (message: Message) => parseToolCalls(message).calls.map((c) => c.name);

describe('tool_calling', () => {
  it("process: offers each item's functions as tools and scores the calls +1 right, -1 wrong", async () => {
    const scripted = await model({ responder: bfclResponder(trainingPlan) });
    const { groups } = await runProcess(
      [
        'tool_calling',
        '--env.data_dir',
        BFCL_DIR,
        '--env.total_steps',
        '4',
        '--env.group_size',
        '2',
        '--openai.base_url',
        scripted.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('tool_calling.jsonl'),
      4,
    );

    // Every request offered the item's functions, converted from BFCL's schema to JSON Schema.
    type Body = { tools?: { function: { name: string; parameters: { type: string } } }[] };
    const bodies = scripted.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as Body);
    expect(bodies).toHaveLength(4);
    for (const body of bodies) for (const tool of body.tools!) expect(tool.function.parameters.type).toBe('object');

    const items = bfclItems();
    const byQuestion = new Map(firstBfclIds(4).map((id) => [items.get(id)!.question, items.get(id)!]));
    const seen: string[] = [];
    for (const group of groups) {
      const item = byQuestion.get(userText(group.messages![0]!))!;
      expect(item, userText(group.messages![0]!)).toBeDefined();
      seen.push(item.id);
      expect(group.scores).toEqual([1, -1]);
      const [right, wrong] = group.messages!.map((messages) => messages.at(-1)!);
      expect(right!.role).toBe('assistant');
      expect(callNames(right!)).toEqual(rightCalls(item).map((c) => c.name));
      // The right answers went both ways: OpenAI tool_calls kept on the message, or Hermes blocks in its text.
      if (trainingPlan(item.id, 0) === 'right_openai') expect(right!.tool_calls).toHaveLength(item.expected.length);
      else expect(text(right)).toContain('<tool_call>');
      const wrongCalls = parseToolCalls(wrong!);
      if (item.category === 'parallel') expect(wrongCalls.malformed).toHaveLength(1);
      if (item.category === 'multiple') expect(wrongCalls.calls[0]!.name).not.toBe(item.expected[0]!.name);
      if (item.category === 'parallel_multiple') expect(wrongCalls.calls).toHaveLength(1);
      if (item.category === 'simple') expect(wrongCalls.calls[0]!.arguments).toHaveProperty('unexpected_param', 1);
    }
    expect(seen.sort()).toEqual(firstBfclIds(4).sort());
  });

  // A server that answers with messages only (no token ids, no logprobs), as OpenAI's API does, serves an evaluation too.
  it.each([
    ['vLLM-like', {}],
    ['messages-only', { tokenIds: false, logprobs: false }],
  ] as const)('evaluate: prints the accuracy of each category and writes metrics.json (%s server)', async (kind, options) => {
    const scripted = await model({ responder: bfclResponder((id) => EVAL_PLAN[id]!), ...options });
    const { metrics, samples, stdout } = await runEvaluate(
      ['tool_calling', '--env.data_dir', BFCL_DIR, '--items', '8', '--openai.base_url', scripted.baseUrl],
      scratch.path(`tool_calling-evals-${kind}`),
    );
    const expected = {
      items: 8,
      score: 0.25,
      accuracy: 0.625,
      accuracy_simple: 1,
      accuracy_multiple: 1,
      accuracy_parallel: 0,
      accuracy_parallel_multiple: 0.5,
      malformed_tool_calls: 0.125,
      no_tool_call: 0.125,
    };
    expect(metrics).toEqual(expected);
    for (const [name, value] of Object.entries(expected)) expect(stdout).toContain(`"${name}": ${value}`);
    expect(samples.map((s) => s.score)).toEqual([1, 1, -1, 1, 1, 1, -1, -1]);
  });
});

// --- tool_use ------------------------------------------------------------------------------------------------------

const KINDS = ['province_sum', 'codes'] as const;
const HOPS = 2;
const TOOL_USE_FLAGS = ['--env.kinds', JSON.stringify(KINDS), '--env.hops', String(HOPS)];
const task = (index: number): ToolUseTask => generateTask({ seed: 0, index, hops: HOPS, kinds: KINDS });
const passage = (t: ToolUseTask, title: string) => t.documents.find((d) => d.title === title)!.text;

/** What the careful agent's tools answer on a task, in order: real results, computed here from the task itself. */
function expectedResults(t: ToolUseTask): ((content: string) => void)[] {
  const is = (value: string) => (content: string) => expect(content).toBe(value);
  if (t.kind === 'codes') {
    const towns = Object.keys(t.kv)
      .slice(0, HOPS)
      .map((key) => String(t.kv[key]));
    return [...towns.map(is), ...towns.map((town) => is(passage(t, town))), is(String(t.answer))];
  }
  const province = /province of (\w+),/.exec(t.question)![1]!;
  const towns = /towns?: (.+?)\. Its capital/.exec(passage(t, `Province of ${province}`))![1]!.split(/, | and /);
  expect(towns).toHaveLength(HOPS);
  return [
    (content) => expect(content).toContain(`Province of ${province}: `),
    ...towns.map((town) => is(passage(t, town))),
    is(String(t.answer)),
  ];
}

/** The trained spans of a scripted sequence are exactly the assistant turns, each as the scripted model encoded it. */
function expectTrainedSpansAreAssistantTurns(group: ScoredDataGroup, sample: number) {
  const tokens = group.tokens[sample]!;
  const logprobs = group.inference_logprobs![sample]!;
  const spans = expectWellFormedSequence(group, sample);
  // The scripted model's logprobs are all below 0 (never the 0 a masked position could be mistaken for).
  for (const { start, end } of spans) expect(logprobs.slice(start, end).every((l) => l < 0)).toBe(true);
  const assistants = group.messages![sample]!.filter((m) => m.role === 'assistant');
  expect(spans.map(({ start, end }) => tokens.slice(start, end))).toEqual(
    assistants.map((m) => encodeCompletion(text(m), m.tool_calls as unknown[] | undefined)),
  );
}

describe('tool_use', () => {
  it('process: an agent solves the tasks with executed tools over several turns; JSONL and HTML show each turn', async () => {
    const scripted = await model({ responder: toolUseAgent });
    const { groups } = await runProcess(
      [
        'tool_use',
        ...TOOL_USE_FLAGS,
        '--env.total_steps',
        '2',
        '--env.group_size',
        '2',
        '--openai.base_url',
        scripted.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('tool_use.jsonl'),
      2,
    );
    const chats = scripted.requests.filter((r) => r.path === '/v1/chat/completions');
    for (const { body } of chats) {
      const offered = (body as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name);
      expect(offered).toEqual(['calculator', 'kv_get', 'kv_set', 'kv_list', 'search', 'lookup']);
    }
    // One request per group for the shared first turn, then one per sample and turn: 3 + 4 (province_sum), 3 + 4 (codes).
    expect(chats).toHaveLength(2 + 14);

    const tasks = new Map([task(0), task(1)].map((t) => [t.question, t]));
    expect(new Set(groups.map((g) => tasks.get(userText(g.messages![0]!))?.kind))).toEqual(new Set(KINDS));
    for (const group of groups) {
      const t = tasks.get(userText(group.messages![0]!))!;
      expect(group.scores).toEqual([1, -1]);
      const [careful, sloppy] = group.messages!;
      const results = careful!.filter((m) => m.role === 'tool');
      const checks = expectedResults(t);
      expect(results).toHaveLength(checks.length);
      results.forEach((m, i) => checks[i]!(text(m)));
      expect(careful!.filter((m) => m.role === 'assistant')).toHaveLength(4);
      expect(text(careful!.find((m) => m.role === 'assistant'))).toMatch(new RegExp(`^${CAREFUL}`));
      expect(text(careful!.at(-1))).toContain(`\\boxed{${t.answer}}`);
      // The careful agent called through OpenAI tool_calls, kept on its messages; the sloppy one wrote Hermes blocks.
      expect(careful!.filter((m) => m.role === 'assistant').map((m) => (m.tool_calls as unknown[] | undefined)?.length ?? 0)).toEqual(
        t.kind === 'codes' ? [HOPS, HOPS, 1, 0] : [1, HOPS, 1, 0],
      );
      expect(sloppy!.filter((m) => m.role === 'assistant' && text(m).includes('<tool_call>'))).toHaveLength(4);
      // The sloppy agent's failed lookup is a tool result it reads, and it answers one more turn later, wrongly.
      expect(text(sloppy!.find((m) => m.role === 'assistant'))).toMatch(new RegExp(`^${SLOPPY}`));
      expect(text(sloppy!.find((m) => m.role === 'tool'))).toMatch(new RegExp(`^Error: no passage titled "${MISSING_TITLE}"`));
      expect(sloppy!.filter((m) => m.role === 'assistant')).toHaveLength(5);
      expect(text(sloppy!.at(-1))).toContain(`\\boxed{${Number(t.answer) + 1}}`);
      // Per-turn rewards from the environment's step: +0.1 for a turn whose calls all succeeded, -0.1 for a failed one.
      const rewards = (messages: Message[]) => messages.filter((m) => m.role === 'assistant').map((m) => m.reward);
      expect(rewards(careful!)).toEqual([0.1, 0.1, 0.1, 0]);
      expect(rewards(sloppy!)).toEqual([-0.1, 0.1, 0.1, 0.1, 0]);
      for (const sample of [0, 1]) expectTrainedSpansAreAssistantTurns(group, sample);
    }

    const html = await readFile(scratch.path('tool_use.html'), 'utf8');
    expect(html).toContain('2 groups');
    expect(html).toContain('turn 1 · tool · lookup');
    // province_sum: search, 2 lookups, calculator; codes: 2 × kv_get, 2 lookups, calculator; the sloppy agent one more.
    for (const facts of [
      'score 1 · 4 turns · 4 tool calls',
      'score -1 · 5 turns · 5 tool calls',
      'score 1 · 4 turns · 5 tool calls',
      'score -1 · 5 turns · 6 tool calls',
    ])
      expect(html).toContain(facts);
  });

  it('evaluate: runs the tools in-process, turn by turn, and scores the final answers', async () => {
    const scripted = await model({ responder: toolUseAgent });
    const { metrics, samples, stdout } = await runEvaluate(
      ['tool_use', ...TOOL_USE_FLAGS, '--items', '2', '--openai.base_url', scripted.baseUrl],
      scratch.path('tool_use-evals'),
    );
    // province_sum: 4 calls, codes: 5, each in 3 turns and then the answer; every call succeeds (+0.1 a turn).
    expect(metrics).toEqual({
      items: 2,
      score: 1,
      correct: 1,
      answered: 1,
      turns: 4,
      tool_calls: 4.5,
      tool_errors: 0,
      failed_calls: 0,
      turn_reward: expect.closeTo(0.3, 10),
    });
    expect(stdout).toContain('"correct": 1');
    expect(samples.map((s) => s.itemIndex)).toEqual([0, 1]);
    for (const sample of samples) {
      const checks = expectedResults(task(sample.itemIndex));
      const results = sample.messages.filter((m) => m.role === 'tool');
      expect(results).toHaveLength(checks.length);
      results.forEach((m, i) => checks[i]!(text(m)));
    }
  });
});

// --- serve ---------------------------------------------------------------------------------------------------------

describe('clotho serve', () => {
  it('feeds tool_use and tool_calling groups to the trainer behind clotho api', async () => {
    const address = inject('temporalAddress');
    api = await startApiProcess({ temporalAddress: address });
    const http = apiClient(api.url);
    await http.post('/register', { ...TRAINER, batch_size: 2, num_steps: 2, max_token_len: 16_384 });
    expect((await http.get('/batch')).json).toEqual({ batch: null });

    const serve = async (name: string, baseUrl: string, flags: string[]) => {
      const run = spawnClotho(
        [
          'serve',
          name,
          ...flags,
          '--batcher-id',
          api!.batcherId,
          '--env.run_id',
          uniqueId(`serve-${name}`),
          '--env.group_size',
          '2',
          '--env.max_batches_offpolicy',
          '1',
          '--env.max_groups_in_flight',
          '1',
          '--openai.base_url',
          baseUrl,
          '--store',
          api!.store,
        ],
        { TEMPORAL_ADDRESS: address },
      );
      children.push(run);
      await waitFor(
        () => run.stdout().includes(`registered as ${name}`) || run.child.exitCode !== null,
        90_000,
        `serve ${name} to register`,
      );
      expect(run.stderr()).toBe('');
      expect(run.child.exitCode).toBeNull();
      return { run, envId: Number(/env_id (\d+)/.exec(run.stdout())?.[1]) };
    };
    const [toolUse, toolCalling] = await Promise.all([
      serve('tool_use', (await model({ responder: toolUseAgent })).baseUrl, TOOL_USE_FLAGS),
      serve('tool_calling', (await model({ responder: bfclResponder(trainingPlan) })).baseUrl, ['--env.data_dir', BFCL_DIR]),
    ]);
    expect(toolUse.envId).not.toBe(toolCalling.envId);

    // One group of each waits (1 batch of 2 sequences, groups of 2, one in flight): the next two batches are one of each.
    const queued = async (envId: number) => (await http.getWithBody('/status-env', { env_id: envId })).json.self_queue_size as number;
    await waitFor(
      async () => (await queued(toolUse.envId)) >= 1 && (await queued(toolCalling.envId)) >= 1,
      90_000,
      'a group of each environment',
    );
    const batches: { messages: Message[][]; env_id: number; scores: number[] }[][] = [];
    await waitFor(
      async () => {
        const { batch } = (await http.get('/batch')).json;
        if (batch) batches.push(batch);
        return batches.length === 2;
      },
      60_000,
      'two batches',
    );
    const groups = batches.flat();
    expect(groups.map((g) => g.env_id).sort()).toEqual([toolUse.envId, toolCalling.envId].sort());

    const fromToolUse = groups.find((g) => g.env_id === toolUse.envId)!;
    expect(fromToolUse.scores).toEqual([1, -1]);
    const t = task(0);
    expect(userText(fromToolUse.messages[0]!)).toBe(t.question);
    const results = fromToolUse.messages[0]!.filter((m) => m.role === 'tool');
    const checks = expectedResults(t);
    expect(results).toHaveLength(checks.length);
    results.forEach((m, i) => checks[i]!(text(m)));

    const fromToolCalling = groups.find((g) => g.env_id === toolCalling.envId)!;
    expect(fromToolCalling.scores).toEqual([1, -1]);
    const item = bfclItems().get('simple_python_0')!;
    expect(userText(fromToolCalling.messages[0]!)).toBe(item.question);
    expect(callNames(fromToolCalling.messages[0]!.at(-1)!)).toEqual([item.expected[0]!.name]);

    // The trainer reached num_steps: both stop launching, finish what is in flight, and exit.
    for (const { run } of [toolUse, toolCalling]) {
      expect(await run.exited).toBe(0);
      expect(run.stdout()).toMatch(/delivered \d+ groups; failed 0/);
    }
  });
});

// --- the embedded engine -------------------------------------------------------------------------------------------

const ASSISTANT_HEADER = [151644, 77091, 198]; // "<|im_start|>assistant\n" in Qwen's vocabulary

/** Token fidelity of a group generated by the embedded engine, and the tools the chat template rendered into its prompt. */
async function expectEngineGroup(group: ScoredDataGroup, maxTokens: number, toolNames: string[]) {
  const tokenizer = await loadTokenizer('qwen3');
  expect(group.tokens).toHaveLength(2);
  const spans = expectWellFormedGroup(group, { maxTrained: maxTokens });
  for (const [i, tokens] of group.tokens.entries()) {
    // Every trained span starts right after an assistant header: only what the model generated is trained on.
    for (const { start } of spans[i]!) expect(tokens.slice(start - 3, start)).toEqual(ASSISTANT_HEADER);
    const prompt = tokenizer.decode(tokens.slice(0, spans[i]![0]!.start));
    expect(prompt).toContain('<tools>');
    for (const name of toolNames) expect(prompt).toContain(`"name": "${name}"`);
  }
}

describe('the embedded engine', () => {
  // The random model makes no real calls and runs out of tokens in its first turn: this checks the token path of a
  // multi-turn environment with its tools rendered into the prompt by the chat template.
  it('process tool_use: token ids, masks and logprobs of a tool environment, its tools rendered by the chat template', async () => {
    const group = await processEngineGroup(
      ['tool_use', '--env.max_turns', '3', '--store', scratch.path('store')],
      scratch.path('engine-tool_use.jsonl'),
      24,
    );
    await expectEngineGroup(group, 24, ['calculator', 'kv_get', 'kv_set', 'kv_list', 'search', 'lookup']);
  });

  it("process tool_calling: single-turn token path with the item's functions rendered as tools", async () => {
    const group = await processEngineGroup(
      ['tool_calling', '--env.data_dir', BFCL_DIR, '--store', scratch.path('store')],
      scratch.path('engine-tool_calling.jsonl'),
      16,
    );
    await expectEngineGroup(
      group,
      16,
      bfclItems()
        .get('simple_python_0')!
        .functions.map((f) => f.name),
    );
    expect(userText(group.messages![0]!)).toBe(bfclItems().get('simple_python_0')!.question);
  });
});
