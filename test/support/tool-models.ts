import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BfclFunction, ExpectedCall, ModelCall } from '../../environments/tool_calling/checker.js';
import { groundTruthCall } from '../../environments/tool_calling/testing.js';
import type { Responder, ScriptedBody, ScriptedChoice } from './scripted-openai.js';

/**
 * Scripted models for the tool environments: a BFCL answerer that reads the tools offered in the request and answers
 * from BFCL's own possible answers, and an agent that solves tool_use tasks with real tool calls over several turns.
 */

/** The BFCL copy the tests read: the one that ships with the tool_calling environment. */
export const BFCL_DIR = fileURLToPath(new URL('../../environments/tool_calling/data', import.meta.url));

const FILES = {
  simple: 'BFCL_v4_simple_python.json',
  multiple: 'BFCL_v4_multiple.json',
  parallel: 'BFCL_v4_parallel.json',
  parallel_multiple: 'BFCL_v4_parallel_multiple.json',
} as const;

/** One BFCL item as the scripted model knows it: its question, its functions and the calls that answer it. */
export interface BfclItem {
  id: string;
  category: keyof typeof FILES;
  question: string;
  functions: BfclFunction[];
  expected: ExpectedCall[];
}

const readLines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line));

let cached: Map<string, BfclItem> | undefined;

/** Every item of the four categories, by id. */
export function bfclItems(): Map<string, BfclItem> {
  if (cached) return cached;
  cached = new Map();
  for (const [category, file] of Object.entries(FILES) as [BfclItem['category'], string][]) {
    const answers = new Map<string, Record<string, Record<string, unknown[]>>[]>(
      readLines(join(BFCL_DIR, 'possible_answer', file)).map((row) => [row.id, row.ground_truth]),
    );
    for (const row of readLines(join(BFCL_DIR, file))) {
      const turn = row.question[0] as { role: string; content: string }[];
      cached.set(row.id, {
        id: row.id,
        category,
        question: turn.filter((m) => m.role === 'user').at(-1)!.content,
        functions: row.function,
        expected: answers.get(row.id)!.map((call) => {
          const [name, args] = Object.entries(call)[0]!;
          return { name, arguments: args };
        }),
      });
    }
  }
  return cached;
}

/** Ids of the first `n` items the environment serves with all four categories (it interleaves them). */
export function firstBfclIds(n: number): string[] {
  const prefixes = ['simple_python', 'multiple', 'parallel', 'parallel_multiple'];
  return Array.from({ length: n }, (_, i) => `${prefixes[i % 4]}_${Math.floor(i / 4)}`);
}

/** The right calls of an item, as a model would write them: the first acceptable value of each parameter. */
export function rightCalls(item: BfclItem): ModelCall[] {
  return item.expected.map((expected) => groundTruthCall(expected, item.functions));
}

/** How the scripted model answers one BFCL item. */
export type BfclAnswer =
  | 'right_openai' // the right calls as OpenAI `tool_calls`
  | 'right_hermes' // the right calls as Hermes `<tool_call>` blocks in the text
  | 'extra_param' // the right calls, the first with a parameter the function does not declare
  | 'wrong_function' // the right arguments to another function offered
  | 'malformed' // a `<tool_call>` block whose JSON does not parse
  | 'partial' // only the first of the expected calls
  | 'no_call'; // text, no call

const hermes = (calls: { name: string; arguments: unknown }[]) =>
  calls.map((call) => `<tool_call>\n${JSON.stringify({ name: call.name, arguments: call.arguments })}\n</tool_call>`).join('\n');

const openAICalls = (calls: { name: string; arguments: unknown }[], idPrefix: string) =>
  calls.map((c, i) => ({ id: `${idPrefix}_${i}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));

function bfclChoice(item: BfclItem, answer: BfclAnswer, offered: string[]): ScriptedChoice {
  const calls = rightCalls(item);
  switch (answer) {
    case 'right_openai':
      return { text: '', toolCalls: openAICalls(calls, 'call') };
    case 'right_hermes':
      return { text: hermes(calls) };
    case 'extra_param':
      return { text: hermes([{ ...calls[0]!, arguments: { ...calls[0]!.arguments, unexpected_param: 1 } }, ...calls.slice(1)]) };
    case 'wrong_function': {
      const other = offered.find((name) => name !== calls[0]!.name);
      if (!other) throw new Error(`${item.id}: no other function offered`);
      return { text: hermes([{ ...calls[0]!, name: other }]) };
    }
    case 'malformed':
      return { text: `<tool_call>\n{"name": "${calls[0]!.name}", "arguments": {\n</tool_call>` };
    case 'partial':
      if (calls.length < 2) throw new Error(`${item.id}: a partial answer needs two expected calls`);
      return { text: hermes(calls.slice(0, 1)) };
    case 'no_call':
      return { text: 'I would rather not call anything.' };
  }
}

const toolNames = (body: ScriptedBody): string[] | undefined => {
  const tools = (body as { tools?: { type?: string; function?: { name?: string } }[] }).tools;
  return tools?.map((t) => String(t.function?.name));
};

const messagesOf = (body: ScriptedBody) => ('messages' in body ? body.messages : []) as { role: string; content?: unknown }[];

/**
 * A scripted model for BFCL: it finds the item by its question and the names of the tools offered (a request without
 * the item's tools is refused with 400), and answers sample `s` of item `id` as `plan(id, s)` says.
 */
export function bfclResponder(plan: (id: string, sample: number) => BfclAnswer): Responder {
  const byKey = new Map(
    [...bfclItems().values()].map((item) => [
      `${item.question}\n${item.functions
        .map((f) => f.name)
        .sort()
        .join(',')}`,
      item,
    ]),
  );
  return (body) => {
    const offered = toolNames(body);
    const question = String(
      messagesOf(body)
        .filter((m) => m.role === 'user')
        .at(-1)?.content ?? '',
    );
    const item = offered && byKey.get(`${question}\n${[...offered].sort().join(',')}`);
    if (!item)
      return {
        status: 400,
        body: { error: { message: `no BFCL item offers tools ${JSON.stringify(offered)} for: ${question.slice(0, 60)}` } },
      };
    return { choices: Array.from({ length: body.n ?? 1 }, (_, sample) => bfclChoice(item, plan(item.id, sample), offered)) };
  };
}

/** A call as the tool_use agent writes it. */
const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

function need(text: string, pattern: RegExp, what: string): string {
  const match = pattern.exec(text);
  if (!match) throw new AgentLost(`${what}: ${pattern} not in ${JSON.stringify(text.slice(0, 200))}`);
  return match[1]!;
}

class AgentLost extends Error {}

/**
 * The plan of a task, step by step: given the question and the results of the earlier steps' calls (one list per
 * step), the calls of the next step, or the final answer.
 */
function nextStep(question: string, results: string[][]): { calls: ReturnType<typeof call>[] } | { answer: string } {
  const step = results.length;
  const codes = /under the codes? (.+)\?$/.exec(question);
  if (codes) {
    // kv_get every code (one turn), lookup every town (one turn), add the elevations up, answer.
    const labels = codes[1]!.split(/, | and /);
    if (step === 0) return { calls: labels.map((label) => call('kv_get', { key: `code/${label}` })) };
    if (step === 1) return { calls: results[0]!.map((town) => call('lookup', { title: town })) };
    const elevations = () => results[1]!.map((text) => need(text, /elevation of ([\d,]+) metres/, 'elevation'));
    if (step === 2) return { calls: [call('calculator', { expression: elevations().join(' + ') })] };
    return { answer: results[2]![0]! };
  }
  const province = need(question, /total population of all the towns in the province of (\w+),/, 'question');
  // search for the province, lookup its towns (one turn), multiply their total, answer.
  if (step === 0) return { calls: [call('search', { query: `Province of ${province}`, k: 3 })] };
  if (step === 1) {
    const passage = results[0]![0]!.split('\n').find((line) => line.includes(`Province of ${province}: `)) ?? '';
    const towns = need(passage, /towns?: (.+?)\. Its capital/, 'towns').split(/, | and /);
    return { calls: towns.map((town) => call('lookup', { title: town })) };
  }
  if (step === 2) {
    const populations = results[1]!.map((text) => need(text, /population of ([\d,]+)/, 'population'));
    return {
      calls: [call('calculator', { expression: `(${populations.join(' + ')}) * ${need(question, /multiplied by (\d+)/, 'factor')}` })],
    };
  }
  return { answer: results[2]![0]! };
}

/** The marks the agent's first turn starts with: the careful one solves the task, the sloppy one does not. */
export const CAREFUL = 'Plan A.';
export const SLOPPY = 'Plan B.';
/** The title the sloppy agent looks up first: no passage has it, so the call fails. */
export const MISSING_TITLE = 'Atlantis';

/**
 * A scripted agent for tool_use tasks of kinds `codes` and `province_sum`: it reads the conversation (the question
 * and the `tool` results of its earlier turns) and writes the next step's calls as Hermes blocks, then the final
 * answer in `\boxed{}`. On a fresh turn with n choices, choice 0 is careful and the others sloppy. The careful agent
 * makes its calls as OpenAI `tool_calls`; a sloppy one writes Hermes blocks, first looks up a title that does not exist,
 * then follows the same plan and boxes the result plus one.
 */
export const toolUseAgent: Responder = (body) => {
  const messages = messagesOf(body);
  const question = String(messages.find((m) => m.role === 'user')?.content ?? '');
  const turns: string[][] = [];
  for (const m of messages) {
    if (m.role === 'assistant') turns.push([]);
    else if (m.role === 'tool' && turns.length > 0) turns.at(-1)!.push(String(m.content));
  }
  const first = messages.find((m) => m.role === 'assistant');
  const reply = (sloppy: boolean): ScriptedChoice => {
    if (sloppy && turns.length === 0)
      return { text: `${SLOPPY} <tool_call>${JSON.stringify(call('lookup', { title: MISSING_TITLE }))}</tool_call>` };
    const results = sloppy ? turns.slice(1) : turns;
    const errors = results.flat().filter((r) => r.startsWith('Error:'));
    if (errors.length > 0) throw new AgentLost(`a tool failed: ${errors[0]}`);
    const next = nextStep(question, results);
    const mark = turns.length === 0 ? `${CAREFUL} ` : '';
    const say = `${mark}Step ${results.length + 1}.`;
    if ('calls' in next && sloppy) return { text: `${say}\n${hermes(next.calls)}` };
    if ('calls' in next) return { text: say, toolCalls: openAICalls(next.calls, `call_${turns.length}`) };
    return { text: `The answer is \\boxed{${sloppy ? Number(next.answer) + 1 : next.answer}}.` };
  };
  try {
    if (first) return { choices: [reply(String(first.content).startsWith(SLOPPY))] };
    return { choices: Array.from({ length: body.n ?? 1 }, (_, i) => reply(i > 0)) };
  } catch (error) {
    // Loud: a group fails with this message rather than being scored.
    if (error instanceof AgentLost) return { status: 400, body: { error: { message: `scripted agent lost: ${error.message}` } } };
    throw error;
  }
};
