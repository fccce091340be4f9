import { defineEnvironment, defineTool, ToolError, z } from 'clotho';
import { assistantTurns, type Responder } from './scripted-openai.js';

/** What the tools and hooks of {@link counterTools} did in this process, for tests to count. */
export const counterLog = {
  /** Idempotency keys of `add` calls that ran to the end (a tool with a side effect). */
  adds: [] as string[],
  flakyAttempts: new Map<string, number>(),
  setups: [] as string[],
  teardowns: [] as string[],
  /** Set while `wait` runs, and when it saw its step cancelled. */
  waiting: false,
  sawCancel: false,
  reset() {
    this.waiting = false;
    this.sawCancel = false;
    this.adds.length = 0;
    this.flakyAttempts.clear();
    this.setups.length = 0;
    this.teardowns.length = 0;
  },
};

const add = defineTool({
  name: 'add',
  description: 'Adds x to the running total and answers the new total',
  parameters: z.object({ x: z.number() }),
  execute({ x }, context) {
    context.state.total += x;
    counterLog.adds.push(context.idempotencyKey);
    return `total ${context.state.total}`;
  },
});

const divide = defineTool({
  name: 'divide',
  description: 'Divides a by b',
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute({ a, b }) {
    if (b === 0) throw new ToolError('division by zero');
    return String(a / b);
  },
});

/** Fails as infrastructure does (not a ToolError) on its first attempt of each call, then answers. */
const flaky = defineTool({
  name: 'flaky',
  description: 'A tool whose server drops the first request',
  parameters: z.object({}),
  execute(_, context) {
    const attempts = (counterLog.flakyAttempts.get(context.idempotencyKey) ?? 0) + 1;
    counterLog.flakyAttempts.set(context.idempotencyKey, attempts);
    if (attempts === 1) throw new Error('connection reset by tool server');
    return 'ok';
  },
});

/** Always fails as infrastructure: the group must fail with this cause, never be scored. */
const broken = defineTool({
  name: 'broken',
  description: 'A tool whose server is down',
  parameters: z.object({}),
  execute() {
    throw new Error('tool server unreachable');
  },
});

/** Works for `ms` milliseconds, heartbeating, so that a short heartbeat timeout does not cut it off. */
const slow = defineTool({
  name: 'slow',
  description: 'A long computation',
  parameters: z.object({ ms: z.number() }),
  async execute({ ms }, context) {
    for (let waited = 0; waited < ms; waited += 100) {
      context.heartbeat({ waited });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return `worked ${ms} ms`;
  },
});

/** Works for `ms` milliseconds without a heartbeat of its own, as a long MCP call or HTTP request does. */
const quiet = defineTool({
  name: 'quiet',
  description: 'A long call to a remote service',
  parameters: z.object({ ms: z.number() }),
  async execute({ ms }, context) {
    counterLog.adds.push(context.idempotencyKey);
    await new Promise((resolve) => setTimeout(resolve, ms));
    return `answered after ${ms} ms`;
  },
});

/** Waits until its step is cancelled (it learns of it through heartbeats), and says it saw it. */
const wait = defineTool({
  name: 'wait',
  description: 'Waits forever',
  parameters: z.object({}),
  async execute(_, context) {
    counterLog.waiting = true;
    while (!context.signal.aborted) {
      context.heartbeat();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    counterLog.sawCancel = true;
    throw new Error('cancelled');
  },
});

const big = defineTool({
  name: 'big',
  description: 'A long result',
  parameters: z.object({}),
  execute: () => 'x'.repeat(5000),
});

/**
 * A tool-using environment for workflow tests: a running total kept in each trajectory's state slot, changed by the
 * `add` tool; the model must answer the total. Each turn's reward is +0.5 when all its tool calls succeeded, −0.5
 * otherwise; advantages per turn are those rewards. With `judge`, the score asks the judge model instead.
 */
export const counterTools = defineEnvironment({
  name: 'counter-tools',
  description: 'keep a running total with tools',
  config: { judge: z.boolean().default(false) },
  defaults: { max_turns: 8 },
  load: async () => ({ size: 4, get: (i: number) => ({ i }) }),
  prompt: () => [{ role: 'user', content: 'Add numbers with the tools, then say the total.' }],
  tools: () => [add, divide, flaky, broken, slow, wait, big, quiet],
  initialState: (_, sample) => ({ total: 0, sample }),
  setup({ groupId }) {
    counterLog.setups.push(groupId);
    return { sandbox: groupId };
  },
  teardown({ groupId }) {
    counterLog.teardowns.push(groupId);
  },
  step: ({ toolResults, sample, state }) => {
    if (state.sample !== sample) throw new Error(`step of sample ${sample} got the state of another`);
    return { messages: [], done: toolResults.length === 0, reward: toolResults.every((r) => !r.content.startsWith('Error')) ? 0.5 : -0.5 };
  },
  parse: async (completion) => {
    const match = completion.match(/-?\d+/g);
    return match ? Number(match.at(-1)) : null;
  },
  async score({ parsed, state, judge, config, group }) {
    if (!(group as { sandbox?: string } | null)?.sandbox) throw new Error('score did not see the setup result');
    if (config.judge) {
      const [verdict] = await judge.complete([{ role: 'user', content: `Is ${parsed} right? Answer yes or no.` }]);
      return verdict!.includes('yes') ? 1 : -1;
    }
    return { score: parsed === state.total ? 1 : -1, metrics: { total: state.total } };
  },
  advantages: ({ turnRewards }) => turnRewards,
});

/**
 * A judged environment for workflow tests: the judge is asked once per group, with three votes, which of the
 * first two completions is better; each sample's score is its share of the votes, and `rescoreGroup` halves them.
 */
export const judgedPairs = defineEnvironment({
  name: 'judged-pairs',
  description: 'two completions compared by a judge model',
  config: {},
  load: async () => ({ size: 4, get: (i: number) => ({ i }) }),
  prompt: () => [{ role: 'user', content: 'Write something good.' }],
  parse: (completion) => completion,
  judge: ({ completions }) => [
    {
      id: 'pair',
      n: 3,
      messages: [
        { role: 'user', content: `A: ${completions[0]}\nB: ${completions[1]}\nWhich is better? Answer \\boxed{A} or \\boxed{B}.` },
      ],
    },
  ],
  score: ({ sample, judgements }) => {
    const votes = judgements.pair ?? [];
    const forFirst = votes.filter((v) => v.includes('\\boxed{A}')).length / votes.length;
    return sample === 0 ? 2 * forFirst - 1 : 1 - 2 * forFirst;
  },
  rescoreGroup: ({ scores }) => scores.map((s) => s / 2),
});

const call = (id: string, name: string, args: Record<string, unknown>) => ({
  id,
  type: 'function',
  function: { name, arguments: JSON.stringify(args) },
});

/**
 * A scripted model for {@link counterTools}. Turn 0: add 2 and add 3 (Hermes text); turn 1: divide by zero (a
 * ToolError), the flaky tool (fails once, then answers), an unknown tool (OpenAI tool_calls); turn 2: the answer.
 */
export const counterScript: Responder = (body) => {
  const turn = assistantTurns(body);
  const choice =
    turn === 0
      ? {
          text: '<tool_call>{"name": "add", "arguments": {"x": 2}}</tool_call><tool_call>{"name": "add", "arguments": {"x": 3}}</tool_call>',
        }
      : turn === 1
        ? { text: '', toolCalls: [call('a', 'divide', { a: 1, b: 0 }), call('b', 'flaky', {}), call('c', 'nope', {})] }
        : { text: 'The total is 5.' };
  return { choices: Array.from({ length: body.n ?? 1 }, () => choice) };
};
