import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mmluCsv, mmluJsonl, mmluParquet } from '../../environments/mcqa/fixtures.js';
import { questionText, type McqaItem } from '../../environments/mcqa/index.js';
import { MASKED, MASKED_LOGPROB, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { runClotho } from '../support/cli.js';
import { startScriptedOpenAI, type Responder, type ScriptedChoice, type ScriptedOpenAI } from '../support/scripted-openai.js';

const MCQA = fileURLToPath(new URL('../../environments/mcqa/index.ts', import.meta.url));
const env = () => ({ TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') });
const readGroups = async (path: string) =>
  (await readFile(path, 'utf8')).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as ScoredDataGroup);

// Three astronomy and two virology questions; the environment interleaves them: a0, v0, a1, v1, a2.
const a0: McqaItem = { subject: 'astronomy', question: 'Which planet is largest?', choices: ['Mars', 'Jupiter', 'Venus', 'Mercury'], answer: 1 };
const a1: McqaItem = { subject: 'astronomy', question: 'Which planet is called the red planet?', choices: ['Mars', 'Earth', 'Saturn', 'Neptune'], answer: 0 };
const a2: McqaItem = { subject: 'astronomy', question: 'How many moons has Mars?', choices: ['0', '1', '2', '3'], answer: 2 };
const v0: McqaItem = { subject: 'virology', question: 'What does a virus need to replicate?', choices: ['light', 'water', 'a host cell', 'oxygen'], answer: 2 };
const v1: McqaItem = { subject: 'virology', question: 'Which of these is a virus?', choices: ['E. coli', 'Influenza', 'Yeast', 'Amoeba'], answer: 1 };
const ITEMS = [a0, a1, a2, v0, v1];

/** Answers each question with the choices planned for it (one per sample), recognised by its prompt. */
function planned(plan: Map<McqaItem, (string | ScriptedChoice)[]>): Responder {
  return (body) => {
    const messages = ('messages' in body ? body.messages : []) as { role: string; content?: unknown }[];
    const user = String(messages.find((m) => m.role === 'user')?.content ?? '');
    const entry = [...plan].find(([item]) => questionText(item) === user);
    if (!entry) return { status: 400, body: { error: { message: `unplanned prompt: ${user.slice(0, 60)}` } } };
    const choices = entry[1].map((c) => (typeof c === 'string' ? { text: c } : c));
    return { choices: choices.slice(0, body.n ?? 1) };
  };
}

let dir: string;
const models: ScriptedOpenAI[] = [];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-mcqa-e2e-'));
  await mkdir(join(dir, 'data', 'test'), { recursive: true });
  for (const subject of ['astronomy', 'virology']) {
    await writeFile(join(dir, 'data', 'test', `${subject}_test.csv`), mmluCsv(ITEMS.filter((i) => i.subject === subject)));
  }
  await writeFile(join(dir, 'test.parquet'), mmluParquet(ITEMS));
  await writeFile(join(dir, 'test.jsonl'), mmluJsonl(ITEMS));
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

describe('mcqa', () => {
  it('process: scores letters +1 / -1 from the hub\'s Parquet, and rescores an all-right group by length', async () => {
    const scripted = await model(planned(new Map<McqaItem, (string | ScriptedChoice)[]>([
      [a0, ['The answer is (B)', 'The answer is (C)']],
      [v0, ['<think>Not light, not water.</think>\\boxed{C}', 'The answer is A. No, the answer is C.']],
      // 5 + 1 generated tokens, and 46 + 1: with a budget of 64 the second is 15 past the free half, 1 - 15/32.
      [a1, ['**A**', 'Let me think. Let me think. The answer is (A).']],
      [v1, [{ text: 'The answer is (B)', finishReason: 'length' }, 'B.']],
    ])));
    const out = join(dir, 'process.jsonl');
    const { code, stdout, stderr } = await runClotho(
      ['process', MCQA, '--env.data_path', join(dir, 'test.parquet'), '--env.total_steps', '4', '--env.group_size', '2',
        '--env.max_token_length', '64', '--openai.base_url', scripted.baseUrl, '--env.data_path_to_save_groups', out, '--store', join(dir, 'store')],
      env(),
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('groups 4/4');
    const groups = await readGroups(out);
    const scoresOf = new Map(groups.map((g) => [String(g.messages![0]!.find((m) => m.role === 'user')!.content), g.scores]));
    expect(Object.fromEntries(scoresOf)).toEqual({
      [questionText(a0)]: [1, -1],
      [questionText(v0)]: [1, -1],
      [questionText(a1)]: [1, 0.53125],
      [questionText(v1)]: [-1, 1],
    });
  });

  it('evaluate: reads the original CSVs and reports accuracy, invalid answers and each subject\'s accuracy', async () => {
    const scripted = await model(planned(new Map([
      [a0, ['The answer is (B)']],
      [v0, ['The answer is (A)']],
      [a1, ['<think>Mars is red.</think>A.']],
      [v1, ['Influenza.']],
      [a2, ['\\boxed{C}']],
    ])));
    const evals = join(dir, 'evals');
    const { code, stdout, stderr } = await runClotho(
      ['evaluate', MCQA, '--env.data_path', join(dir, 'data'), '--items', '5', '--openai.base_url', scripted.baseUrl, '--env.data_dir_to_save_evals', evals],
      env(),
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const expected = { items: 5, score: 0.2, accuracy: 0.6, accuracy_astronomy: 1, accuracy_virology: 0, invalid: 0.2 };
    expect(JSON.parse(await readFile(join(evals, 'metrics.json'), 'utf8'))).toEqual(expected);
    for (const [name, value] of Object.entries(expected)) expect(stdout).toContain(`"${name}": ${value}`);
    const samples = (await readFile(join(evals, 'samples.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { score: number });
    expect(samples.map((s) => s.score)).toEqual([1, -1, 1, -1, 1]);
  });

  it('process on the embedded engine: a well-formed group from the hub\'s JSON lines', async () => {
    const out = join(dir, 'engine.jsonl');
    const { code, stdout, stderr } = await runClotho(
      ['process', MCQA, '--env.data_path', join(dir, 'test.jsonl'), '--env.total_steps', '1', '--env.group_size', '2', '--env.max_token_length', '16',
        '--env.ensure_scores_are_not_same', 'false', '--env.data_path_to_save_groups', out, '--store', join(dir, 'store')],
      env(),
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('groups 1/1');
    const [group, ...rest] = await readGroups(out);
    expect(rest).toHaveLength(0);
    expect(group!.tokens).toHaveLength(2);
    expect(group!.scores).toHaveLength(2);
    // A generated model answers nothing readable: each reply is wrong, invalid or cut off, and scores -1.
    expect(group!.scores).toEqual([-1, -1]);
    for (const [i, tokens] of group!.tokens.entries()) {
      const masks = group!.masks[i]!;
      const logprobs = group!.inference_logprobs![i]!;
      expect(masks).toHaveLength(tokens.length);
      expect(logprobs).toHaveLength(tokens.length);
      const first = masks.findIndex((m) => m !== MASKED);
      expect(first).toBeGreaterThan(0);
      expect(masks.slice(0, first).every((m) => m === MASKED)).toBe(true);
      expect(logprobs.slice(0, first).every((l) => l === MASKED_LOGPROB)).toBe(true);
      expect(masks.slice(first)).toEqual(tokens.slice(first));
      expect(tokens.length - first).toBeLessThanOrEqual(16);
      expect(logprobs.slice(first).every((l) => l <= 0)).toBe(true);
    }
    expect(String(group!.messages![0]!.find((m) => m.role === 'user')!.content)).toBe(questionText(a0));
  });
});
