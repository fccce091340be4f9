import { defineEnvironment, mcpTools, McpServerConfigSchema, z, type Message, type ToolOffer } from 'clotho';
import { turnAdvantages } from './advantages.js';
import { answersMatch, extractAnswer } from './answer.js';
import { generateTask, TASK_KINDS, type ToolUseTask } from './tasks.js';
import { taskTools, type ToolUseState } from './tools.js';

export const SYSTEM_PROMPT =
  'You answer questions about a fictional world by calling tools. Facts are in a collection of documents ' +
  '(search finds passages, lookup reads one by title) and in a key-value store (kv_list, kv_get, kv_set); ' +
  'use the calculator for arithmetic rather than computing in your head. Call tools as often as you need, one step ' +
  'at a time, and read each result before going on. When you know the answer, reply without calling a tool and ' +
  'give the final answer in \\boxed{}: a number such as \\boxed{37200}, or a name such as \\boxed{Ekest}.';

/** Tool results that are errors: Clotho's executor writes unknown tools, bad arguments and ToolErrors so. */
const isError = (message: { content?: unknown }): boolean => typeof message.content === 'string' && message.content.startsWith('Error:');

/**
 * Counts of a finished trajectory: assistant turns, tool calls, and calls that failed for any reason the model could
 * fix (a ToolError, an unknown tool or bad arguments; Clotho's own `tool_errors` counts ToolErrors only).
 */
function counts(messages: Message[]): { turns: number; tool_calls: number; failed_calls: number } {
  const results = messages.filter((m) => m.role === 'tool');
  return {
    turns: messages.filter((m) => m.role === 'assistant').length,
    tool_calls: results.length,
    failed_calls: results.filter(isError).length,
  };
}

/**
 * Multi-hop questions answered with executed tools: search and lookup over a generated corpus, a key-value store in
 * the trajectory's state and a calculator, plus any MCP servers' tools. +1 for the right final answer, −1 otherwise;
 * a small per-turn reward for tool calls that succeed, and optional turn-level advantages.
 */
export default defineEnvironment({
  name: 'tool_use',
  description:
    'Multi-hop questions over a generated corpus and key-value store, answered by calling tools over many turns; +1/-1 on the final \\boxed{} answer',
  config: {
    seed: z.number().int().default(0).describe('names the generated data set: the same seed gives the same tasks'),
    size: z.number().int().positive().default(10_000).describe('tasks per epoch; item i is task i mod size'),
    hops: z.number().int().min(1).max(8).default(3).describe('difficulty: tool calls in sequence each task needs'),
    kinds: z
      .array(z.enum(TASK_KINDS))
      .min(1)
      .default([...TASK_KINDS])
      .describe('task kinds, taken in turn'),
    mcp_servers: z.array(McpServerConfigSchema).default([]).describe('stdio MCP servers whose tools are offered too'),
    turn_reward: z.number().min(0).default(0.1).describe("per-turn reward: +r when all of a turn's tool calls succeed, -r when one fails"),
    turn_advantages: z.boolean().default(false).describe('send turn-level advantages (discounted return vs the group mean)'),
    gamma: z.number().min(0).max(1).default(1).describe('discount per turn of the return behind turn advantages'),
  },
  defaults: { max_turns: 30, group_size: 4, max_token_length: 8192 },

  async load(config) {
    const options = { seed: config.seed, hops: config.hops, kinds: config.kinds };
    // Tasks are made on demand: item i is the same on every worker and costs nothing until asked for.
    return { size: config.size, get: (index: number) => generateTask({ ...options, index }) };
  },

  prompt: (item: ToolUseTask) => [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: item.question },
  ],

  async tools(item, config): Promise<ToolOffer[]> {
    const mcp = config.mcp_servers.length > 0 ? await mcpTools(config.mcp_servers) : [];
    return [...taskTools(item.documents), ...mcp];
  },

  // A copy: the store in the state slot changes with every kv_set, the task's preload must not.
  initialState: (item): ToolUseState => ({ kv: { ...item.kv } }),

  // The episode ends at the first turn without tool calls; every turn earns a small reward for how its calls went.
  step({ toolResults }, config) {
    if (toolResults.length === 0) return { messages: [], done: true, reward: 0 };
    return { messages: [], done: false, reward: toolResults.some(isError) ? -config.turn_reward : config.turn_reward };
  },

  parse: (completion) => extractAnswer(completion),

  score({ item, parsed, messages, turnRewards }) {
    const correct = answersMatch(parsed, item.answer);
    return {
      score: correct ? 1 : -1,
      metrics: {
        correct: correct ? 1 : 0,
        answered: parsed === null ? 0 : 1,
        ...counts(messages),
        turn_reward: turnRewards.reduce((a, b) => a + b, 0),
      },
    };
  },

  advantages: ({ scores, turnRewards, config }) => (config.turn_advantages ? turnAdvantages(scores, turnRewards, config.gamma) : null),
});
