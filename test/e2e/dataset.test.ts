import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { beforeAll, describe, expect, it } from 'vitest';
import dataset from '../../environments/dataset/index.js';
import { playEpisode } from '../../src/env/testing.js';
import { GSM8K_TEST, gsm8kResponder } from '../support/gsm8k-model.js';
import { expectWellFormedGroup } from '../support/groups.js';
import { processEngineGroup, runEvaluate, runProcess, useScratch } from '../support/runs.js';
import { startScriptedOpenAI, type Responder } from '../support/scripted-openai.js';

const DATASET = fileURLToPath(new URL('../../environments/dataset/index.ts', import.meta.url));

// A small competition-math table: golds in LaTeX, answered by the scripted model in other, equal forms.
const PROBLEMS = [
  { problem: 'What is $\\frac{2}{4}$ in lowest terms?', solution: 'Divide by two: $\\boxed{\\frac{1}{2}}$.', right: '0.5', wrong: '2' },
  { problem: 'How many grams are in 1.5 kilograms?', solution: '$\\boxed{1{,}500}$', right: '1500 \\text{ g}', wrong: '150' },
  { problem: 'Rationalise $\\frac{1}{\\sqrt{2}}$.', solution: '$\\boxed{\\frac{\\sqrt{2}}{2}}$', right: '\\sqrt{2}/2', wrong: '\\sqrt{2}' },
  { problem: 'Expand $(x+1)^2$.', solution: '$\\boxed{x^2+2x+1}$', right: '1+2x+x^2', wrong: 'x^2+1' },
];
const SYSTEM = 'Think inside <think></think>, then give the answer in \\boxed{}.';

// Right: reasoning first, 40 characters or fewer (length 1). Wrong: no reasoning, 60 characters (length 0.5).
const rightText = (p: (typeof PROBLEMS)[number]) => `<think>ok</think>\\boxed{${p.right}}`;
const wrongText = (p: (typeof PROBLEMS)[number]) => `\\boxed{${p.wrong}}`.padStart(60, '.');
const REWARDS = JSON.stringify([
  { name: 'accuracy', weight: 1 },
  { name: 'format', weight: 0.5 },
  { name: 'length', weight: 0.25, max_length: 80 },
]);
const RIGHT_SCORE = 1 + 0.5 + 0.25;
const WRONG_SCORE = 0.25 * 0.5;

/** Answers a problem by its user turn: `right(index, sample)` says which way. */
const responder =
  (right: (index: number, sample: number) => boolean): Responder =>
  (body) => {
    const messages = ('messages' in body ? body.messages : []) as { role: string; content?: unknown }[];
    const index = PROBLEMS.findIndex((p) => p.problem === messages.find((m) => m.role === 'user')?.content);
    if (index < 0 || messages[0]?.content !== SYSTEM) return { status: 400, body: { error: { message: 'unexpected prompt' } } };
    const p = PROBLEMS[index]!;
    return { choices: Array.from({ length: body.n ?? 1 }, (_, sample) => ({ text: right(index, sample) ? rightText(p) : wrongText(p) })) };
  };

const scratch = useScratch('clotho-dataset-e2e-');
let jsonl: string;
let parquet: string;
beforeAll(async () => {
  jsonl = scratch.path('math.jsonl');
  await writeFile(jsonl, PROBLEMS.map(({ problem, solution }) => JSON.stringify({ problem, solution })).join('\n') + '\n');
  parquet = scratch.path('math.parquet');
  await writeFile(
    parquet,
    Buffer.from(
      parquetWriteBuffer({
        columnData: [
          { name: 'problem', data: PROBLEMS.map((p) => p.problem) },
          { name: 'solution', data: PROBLEMS.map((p) => p.solution) },
        ],
      }),
    ),
  );
});
const model = async (responder: Responder) => scratch.closeAfter(await startScriptedOpenAI({ responder }));
const mathFlags = (data: string) => [
  '--env.data_path',
  data,
  '--env.prompt_field',
  'problem',
  '--env.answer_field',
  'solution',
  '--env.system_prompt',
  SYSTEM,
  '--env.reward_fns',
  REWARDS,
];

describe('dataset environment', () => {
  it('process: a Parquet table, scored by a weighted combination of named rewards', async () => {
    const scripted = await model(responder((_, sample) => sample === 0));
    const { groups } = await runProcess(
      [
        DATASET,
        ...mathFlags(parquet),
        '--env.total_steps',
        '4',
        '--env.group_size',
        '2',
        '--openai.base_url',
        scripted.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('process.jsonl'),
      4,
    );
    const seen = new Set<string>();
    for (const group of groups) {
      expect(group.scores).toEqual([RIGHT_SCORE, WRONG_SCORE]);
      const user = group.messages![0]!.find((m) => m.role === 'user')!;
      seen.add(String(user.content));
      const p = PROBLEMS.find((q) => q.problem === user.content)!;
      expect(group.messages!.map((messages) => messages.at(-1)!.content)).toEqual([rightText(p), wrongText(p)]);
    }
    expect(seen.size).toBe(4);
  });

  it("evaluate: each reward function's mean is a metric beside the weighted score", async () => {
    const scripted = await model(responder((index) => index % 2 === 0));
    const { metrics, samples, stdout } = await runEvaluate(
      [DATASET, ...mathFlags(jsonl), '--items', '4', '--openai.base_url', scripted.baseUrl],
      scratch.path('evals'),
    );
    const expected = { items: 4, score: (RIGHT_SCORE + WRONG_SCORE) / 2, accuracy: 0.5, format: 0.5, length: 0.75 };
    expect(metrics).toEqual(expected);
    expect(stdout).toContain('"accuracy": 0.5');
    expect(samples.map((s) => s.score)).toEqual([RIGHT_SCORE, WRONG_SCORE, RIGHT_SCORE, WRONG_SCORE]);
  });

  it('evaluate on GSM8K\'s real test file, gold answers taken from its "#### n" lines', async () => {
    const scripted = await model(gsm8kResponder((item) => item % 2 === 0));
    const { metrics } = await runEvaluate(
      [
        DATASET,
        '--env.data_path',
        GSM8K_TEST,
        '--env.prompt_field',
        'question',
        '--env.answer_field',
        'answer',
        '--env.answer_pattern',
        '####\\s*(.+)$',
        '--env.reward_fns',
        'accuracy',
        '--items',
        '10',
        '--openai.base_url',
        scripted.baseUrl,
      ],
      scratch.path('gsm8k-evals'),
    );
    expect(metrics).toEqual({ items: 10, score: 0.5, accuracy: 0.5 });
  });

  it('process on the embedded engine: well-formed groups of generated tokens', async () => {
    const group = await processEngineGroup(
      [DATASET, ...mathFlags(jsonl), '--store', scratch.path('store')],
      scratch.path('engine.jsonl'),
      16,
    );
    expectWellFormedGroup(group, { maxTrained: 16 });
    for (const i of group.tokens.keys()) {
      // The score is the weighted rewards of the text the engine generated, against the item's gold solution.
      const [system, user, assistant] = group.messages![i]!;
      expect(system).toEqual({ role: 'system', content: SYSTEM });
      const { problem, solution } = PROBLEMS.find((p) => p.problem === user!.content)!;
      const replayed = await playEpisode(dataset, {
        item: { prompt: problem, answer: solution },
        replies: [String(assistant!.content)],
        argv: mathFlags(jsonl),
      });
      expect(group.scores[i]).toBe(replayed.score);
    }
  });
});
