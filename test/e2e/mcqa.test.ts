import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { mmluCsv, mmluJsonl, mmluParquet } from '../../environments/mcqa/fixtures.js';
import { questionText, type McqaItem } from '../../environments/mcqa/index.js';
import { expectWellFormedGroup } from '../support/groups.js';
import { processEngineGroup, runEvaluate, runProcess, useScratch } from '../support/runs.js';
import { startScriptedOpenAI, type Responder, type ScriptedChoice } from '../support/scripted-openai.js';

const MCQA = fileURLToPath(new URL('../../environments/mcqa/index.ts', import.meta.url));

// Three astronomy and two virology questions; the environment interleaves them: a0, v0, a1, v1, a2.
const a0: McqaItem = {
  subject: 'astronomy',
  question: 'Which planet is largest?',
  choices: ['Mars', 'Jupiter', 'Venus', 'Mercury'],
  answer: 1,
};
const a1: McqaItem = {
  subject: 'astronomy',
  question: 'Which planet is called the red planet?',
  choices: ['Mars', 'Earth', 'Saturn', 'Neptune'],
  answer: 0,
};
const a2: McqaItem = { subject: 'astronomy', question: 'How many moons has Mars?', choices: ['0', '1', '2', '3'], answer: 2 };
const v0: McqaItem = {
  subject: 'virology',
  question: 'What does a virus need to replicate?',
  choices: ['light', 'water', 'a host cell', 'oxygen'],
  answer: 2,
};
const v1: McqaItem = {
  subject: 'virology',
  question: 'Which of these is a virus?',
  choices: ['E. coli', 'Influenza', 'Yeast', 'Amoeba'],
  answer: 1,
};
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

const scratch = useScratch('clotho-mcqa-e2e-');
beforeAll(async () => {
  await mkdir(scratch.path('data', 'test'), { recursive: true });
  for (const subject of ['astronomy', 'virology']) {
    await writeFile(scratch.path('data', 'test', `${subject}_test.csv`), mmluCsv(ITEMS.filter((i) => i.subject === subject)));
  }
  await writeFile(scratch.path('test.parquet'), mmluParquet(ITEMS));
  await writeFile(scratch.path('test.jsonl'), mmluJsonl(ITEMS));
});
const model = async (responder: Responder) => scratch.closeAfter(await startScriptedOpenAI({ responder }));

describe('mcqa', () => {
  it("process: scores letters +1 / -1 from the hub's Parquet, and rescores an all-right group by length", async () => {
    const scripted = await model(
      planned(
        new Map<McqaItem, (string | ScriptedChoice)[]>([
          [a0, ['The answer is (B)', 'The answer is (C)']],
          [v0, ['<think>Not light, not water.</think>\\boxed{C}', 'The answer is A. No, the answer is C.']],
          // 5 + 1 generated tokens, and 46 + 1: with a budget of 64 the second is 15 past the free half, 1 - 15/32.
          [a1, ['**A**', 'Let me think. Let me think. The answer is (A).']],
          [v1, [{ text: 'The answer is (B)', finishReason: 'length' }, 'B.']],
        ]),
      ),
    );
    const { groups } = await runProcess(
      [
        MCQA,
        '--env.data_path',
        scratch.path('test.parquet'),
        '--env.total_steps',
        '4',
        '--env.group_size',
        '2',
        '--env.max_token_length',
        '64',
        '--openai.base_url',
        scripted.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('process.jsonl'),
      4,
    );
    const scoresOf = new Map(groups.map((g) => [String(g.messages![0]!.find((m) => m.role === 'user')!.content), g.scores]));
    expect(Object.fromEntries(scoresOf)).toEqual({
      [questionText(a0)]: [1, -1],
      [questionText(v0)]: [1, -1],
      [questionText(a1)]: [1, 0.53125],
      [questionText(v1)]: [-1, 1],
    });
  });

  it("evaluate: reads the original CSVs and reports accuracy, invalid answers and each subject's accuracy", async () => {
    const scripted = await model(
      planned(
        new Map([
          [a0, ['The answer is (B)']],
          [v0, ['The answer is (A)']],
          [a1, ['<think>Mars is red.</think>A.']],
          [v1, ['Influenza.']],
          [a2, ['\\boxed{C}']],
        ]),
      ),
    );
    const { metrics, samples, stdout } = await runEvaluate(
      [MCQA, '--env.data_path', scratch.path('data'), '--items', '5', '--openai.base_url', scripted.baseUrl],
      scratch.path('evals'),
    );
    const expected = { items: 5, score: 0.2, accuracy: 0.6, accuracy_astronomy: 1, accuracy_virology: 0, invalid: 0.2 };
    expect(metrics).toEqual(expected);
    for (const [name, value] of Object.entries(expected)) expect(stdout).toContain(`"${name}": ${value}`);
    expect(samples.map((s) => s.score)).toEqual([1, -1, 1, -1, 1]);
  });

  it("process on the embedded engine: a well-formed group from the hub's JSON lines", async () => {
    const group = await processEngineGroup(
      [MCQA, '--env.data_path', scratch.path('test.jsonl'), '--store', scratch.path('store')],
      scratch.path('engine.jsonl'),
      16,
    );
    // A generated model answers nothing readable: each reply is wrong, invalid or cut off, and scores -1.
    expect(group.scores).toEqual([-1, -1]);
    // One trained span per sequence, after the prompt and to the end: the completion.
    const spans = expectWellFormedGroup(group, { maxTrained: 16 });
    for (const [i, tokens] of group.tokens.entries()) {
      expect(spans[i]).toEqual([{ start: expect.any(Number), end: tokens.length }]);
      expect(spans[i]![0]!.start).toBeGreaterThan(0);
    }
    expect(String(group.messages![0]!.find((m) => m.role === 'user')!.content)).toBe(questionText(a0));
  });
});
