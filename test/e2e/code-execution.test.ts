import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MASKED, MASKED_LOGPROB, type Message, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { runClotho } from '../support/cli.js';
import { startScriptedOpenAI, type Responder, type ScriptedOpenAI } from '../support/scripted-openai.js';

const HUMANEVAL = new URL('../../../shared/datasets/humaneval/HumanEval.jsonl', import.meta.url).pathname;
const ENVIRONMENT = './environments/code_execution/index.ts';
interface Row { task_id: string; prompt: string; canonical_solution: string }
const rows = readFileSync(HUMANEVAL, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Row);
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

const env = () => ({ TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') });
const readGroups = async (path: string) =>
  (await readFile(path, 'utf8')).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as ScoredDataGroup);
const userText = (messages: Message[]) => String(messages.find((m) => m.role === 'user')?.content ?? '');

let dir: string;
const models: ScriptedOpenAI[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-code-e2e-'));
});
afterAll(async () => {
  await Promise.all(models.map((m) => m.close()));
  await rm(dir, { recursive: true, force: true });
});
const model = async (responder: Responder) => {
  const started = await startScriptedOpenAI({ responder });
  models.push(started);
  return started;
};

describe('code_execution end to end', () => {
  it('process: runs each sample\'s code in the sandbox, +1 for the canonical solution and -1 for a wrong one', async () => {
    const scripted = await model(humanEvalResponder((_, sample) => (sample === 0 ? 'right' : 'wrong')));
    const out = join(dir, 'code.jsonl');
    const { code, stdout, stderr } = await runClotho(
      ['process', ENVIRONMENT, '--env.data_path', HUMANEVAL, '--env.total_steps', '3', '--env.group_size', '2',
        '--openai.base_url', scripted.baseUrl, '--env.data_path_to_save_groups', out, '--store', join(dir, 'store')],
      env(),
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('groups 3/3');
    const groups = await readGroups(out);
    expect(groups).toHaveLength(3);
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
    const evals = join(dir, 'evals');
    const { code, stdout, stderr } = await runClotho(
      ['evaluate', ENVIRONMENT, '--env.data_path', HUMANEVAL, '--items', '6', '--env.timeout', '2',
        '--openai.base_url', scripted.baseUrl, '--env.data_dir_to_save_evals', evals],
      env(),
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const metrics = JSON.parse(await readFile(join(evals, 'metrics.json'), 'utf8')) as Record<string, number>;
    expect(metrics).toEqual({ items: 6, score: 0, passed: 0.5, timed_out: expect.closeTo(1 / 6, 10), has_code: 1, fenced: 1 });
    expect(stdout).toContain('"passed": 0.5');
    const samples = (await readFile(join(evals, 'samples.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { itemIndex: number; score: number });
    expect(samples.map((s) => [s.itemIndex, s.score])).toEqual([[0, 1], [1, -1], [2, 1], [3, -1], [4, 1], [5, -1]]);
  });

  it('the embedded engine: a group of well-formed rollouts whose random code fails its tests', async () => {
    const out = join(dir, 'engine.jsonl');
    const { code, stdout, stderr } = await runClotho(
      ['process', ENVIRONMENT, '--env.data_path', HUMANEVAL, '--env.total_steps', '1', '--env.group_size', '2', '--env.max_token_length', '16',
        '--env.ensure_scores_are_not_same', 'false', '--env.data_path_to_save_groups', out, '--store', join(dir, 'store')],
      env(),
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('groups 1/1');
    const [group, ...rest] = await readGroups(out);
    expect(rest).toHaveLength(0);
    expect(group!.scores).toEqual([-1, -1]);
    expect(byPrompt.has(/```python\n([\s\S]*)```$/.exec(userText(group!.messages![0]!))![1]!)).toBe(true);
    for (const [i, tokens] of group!.tokens.entries()) {
      const masks = group!.masks[i]!;
      const logprobs = group!.inference_logprobs![i]!;
      expect(masks).toHaveLength(tokens.length);
      expect(logprobs).toHaveLength(tokens.length);
      let generated = 0;
      masks.forEach((m, j) => {
        if (m === MASKED) return void expect(logprobs[j]).toBe(MASKED_LOGPROB);
        generated++;
        expect(m).toBe(tokens[j]);
        expect(logprobs[j]).toBeLessThanOrEqual(0);
      });
      expect(generated).toBeGreaterThan(0);
      expect(generated).toBeLessThanOrEqual(16);
    }
  });
});
