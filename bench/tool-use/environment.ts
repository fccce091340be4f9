/**
 * The tool-use benchmark's environment and model: every turn but the last the model calls an instant tool, then it
 * answers. Nothing but multi-turn orchestration around inference.
 */
import { z } from 'zod';
import { defineEnvironment } from '../../src/env/define.js';
import { defineTool } from '../../src/env/tools.js';
import type { Responder, ScriptedBody } from '../../test/support/scripted-openai.js';

/** What the model answers on its last turn. */
export const FINAL_ANSWER = 'done';

/** A tool that answers at once: its cost is the orchestration around it. */
const add = defineTool({
  name: 'add',
  description: 'adds one to x',
  parameters: z.object({ x: z.number() }),
  execute: ({ x }) => String(x + 1),
});

/** One user message per item, the `add` tool, and a reward for answering at the end. */
export const toolBenchEnv = defineEnvironment({
  name: 'tool-bench',
  description: 'an instant tool called every turn until the last: nothing but multi-turn orchestration',
  config: {},
  load: async () => ({ size: 1_000_000, get: (i: number) => ({ i }) }),
  prompt: (item) => [{ role: 'user', content: `item ${item.i}: call add until you are done` }],
  tools: () => [add],
  parse: (completion) => completion.trim(),
  score: ({ parsed }) => (parsed === FINAL_ANSWER ? 1 : -1),
});

/**
 * The scripted model of a `turns`-turn episode, each call answered after `delayMs`. The turn is read off the request:
 * the prompt is one message and every turn before adds the assistant's call and the tool's answer.
 */
export function toolCallingModel(turns: number, delayMs: number): Responder {
  return (body) => {
    const turn = 'messages' in body && Array.isArray(body.messages) ? (body.messages.length - 1) / 2 : 0;
    const text = turn + 1 < turns ? `<tool_call>{"name": "add", "arguments": {"x": ${turn}}}</tool_call>` : FINAL_ANSWER;
    return { delayMs, choices: Array.from({ length: body.n ?? 1 }, () => ({ text })) };
  };
}

/** The episode (item index) a request of the tool bench is for, read off its prompt. */
export function episodeOf(body: ScriptedBody): number {
  const first = 'messages' in body && Array.isArray(body.messages) ? body.messages[0] : undefined;
  const item = typeof first?.content === 'string' ? /^item (\d+):/.exec(first.content) : null;
  if (!item) throw new Error('a tool-bench request without its item in the prompt');
  return Number(item[1]);
}
