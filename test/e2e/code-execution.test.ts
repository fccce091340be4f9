import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/schema/scored-data.js';
import { expectWellFormedGroup } from '../support/groups.js';
import { processEngineGroup, runEvaluate, runProcess, useScratch } from '../support/runs.js';
import { startScriptedOpenAI, type Responder } from '../support/scripted-openai.js';

const HUMANEVAL = fileURLToPath(new URL('../../environments/code_execution/data/HumanEval.jsonl', import.meta.url));
const ENVIRONMENT = './environments/code_execution/index.ts';
interface Row {
  task_id: string;
  prompt: string;
  canonical_solution: string;
}
const rows = readFileSync(HUMANEVAL, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as Row);
const byPrompt = new Map(rows.map((row, i) => [row.prompt, i]));

type Answer = 'right' | 'wrong' | 'loop';
/** What a reply holds: the canonical solution, one that raises, or one that never returns (stopped by the sandbox). */
function reply(row: Row, answer: Answer): string {
  const body = { right: row.canonical_solution, wrong: '    raise NotImplementedError\n', loop: '    while True:\n        pass\n' }[answer];
  return `Here is my solution.\n\n\`\`\`python\n${row.prompt}${body}\`\`\`\n`;
}

/** Finds the problem in the user message (the prompt in a fence) and answers each sample as `plan` says. */
function humanEvalResponder(plan: (item: number, sample: number) => Answer): Responder {
  return (body) => {
    const messages = ('messages' in body ? body.messages : []) as Message[];
    const user = String(messages.find((m) => m.role === 'user')?.content ?? '');
    const prompt = /```python\n([\s\S]*)```$/.exec(user)?.[1] ?? '';
    const item = byPrompt.get(prompt);
    if (item === undefined) return { status: 400, body: { error: { message: `no HumanEval prompt in: ${user.slice(0, 60)}` } } };
    return { choices: Array.from({ length: body.n ?? 1 }, (_, sample) => ({ text: reply(rows[item]!, plan(item, sample)) })) };
  };
}

const userText = (messages: Message[]) => String(messages.find((m) => m.role === 'user')?.content ?? '');

const scratch = useScratch('clotho-code-e2e-');
const model = async (responder: Responder) => scratch.closeAfter(await startScriptedOpenAI({ responder }));

describe('code_execution end to end', () => {
  it("process: runs each sample's code in the sandbox, +1 for the canonical solution and -1 for a wrong one", async () => {
    const scripted = await model(humanEvalResponder((_, sample) => (sample === 0 ? 'right' : 'wrong')));
    const { groups } = await runProcess(
      [
        ENVIRONMENT,
        '--env.data_path',
        HUMANEVAL,
        '--env.total_steps',
        '3',
        '--env.group_size',
        '2',
        '--openai.base_url',
        scripted.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('code.jsonl'),
      3,
    );
    const items = new Set<number>();
    for (const group of groups) {
      expect(group.scores).toEqual([1, -1]);
      const item = byPrompt.get(/```python\n([\s\S]*)```$/.exec(userText(group.messages![0]!))![1]!)!;
      items.add(item);
      const [right, wrong] = group.messages!.map((messages) => String(messages.at(-1)!.content));
      expect(right).toBe(reply(rows[item]!, 'right'));
      expect(wrong).toBe(reply(rows[item]!, 'wrong'));
    }
    expect(items.size).toBe(3);
  });

  it('evaluate: one greedy reply per item; a wrong one and one that loops forever score -1', async () => {
    const plan: Answer[] = ['right', 'wrong', 'right', 'loop', 'right', 'wrong'];
    const scripted = await model(humanEvalResponder((item) => plan[item]!));
    const { metrics, samples, stdout } = await runEvaluate(
      [ENVIRONMENT, '--env.data_path', HUMANEVAL, '--items', '6', '--env.timeout', '2', '--openai.base_url', scripted.baseUrl],
      scratch.path('evals'),
    );
    expect(metrics).toEqual({ items: 6, score: 0, passed: 0.5, timed_out: expect.closeTo(1 / 6, 10), has_code: 1, fenced: 1 });
    expect(stdout).toContain('"passed": 0.5');
    expect(samples.map((s) => [s.itemIndex, s.score])).toEqual([
      [0, 1],
      [1, -1],
      [2, 1],
      [3, -1],
      [4, 1],
      [5, -1],
    ]);
  });

  it('the embedded engine: a group of well-formed rollouts whose random code fails its tests', async () => {
    const group = await processEngineGroup(
      [ENVIRONMENT, '--env.data_path', HUMANEVAL, '--store', scratch.path('store')],
      scratch.path('engine.jsonl'),
      16,
    );
    expect(group.scores).toEqual([-1, -1]);
    expect(byPrompt.has(/```python\n([\s\S]*)```$/.exec(userText(group.messages![0]!))![1]!)).toBe(true);
    expectWellFormedGroup(group, { maxTrained: 16 });
  });
});
