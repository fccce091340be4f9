import { beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_RECORDS, writeFixture } from '../../environments/fundamental_prediction/fixture.js';
import type { FundamentalRecord } from '../../environments/fundamental_prediction/index.js';
import type { Message } from '../../src/schema/scored-data.js';
import { expectWellFormedGroup } from '../support/groups.js';
import { processEngineGroup, runEvaluate, runProcess, useScratch } from '../support/runs.js';
import { encodeCompletion, startScriptedOpenAI, type Responder, type ScriptedBody } from '../support/scripted-openai.js';

const ENV = './environments/fundamental_prediction/index.ts';
const userText = (messages: Message[]) => String(messages.find((m) => m.role === 'user')?.content ?? '');
const recordOf = (prompt: string) => FIXTURE_RECORDS.find((r) => prompt.endsWith(`\n${r.context}`));
const recordOfBody = (body: ScriptedBody) => recordOf(userText((body as { messages: Message[] }).messages))!;

const THINK = '<think>Comparing the trend with the news and the macro data.</think>\n';
const sentence = (r: FundamentalRecord, direction: string, magnitude: string) =>
  `The ${r.fundamental_metric} will be: ${direction} and the magnitude will be: ${magnitude}%`;
const otherDirection = (r: FundamentalRecord) => (r.answer === 'raised' ? 'reduced' : 'raised');
const plus = (magnitude: string | number, points: number) => String(Number(magnitude) + points);

// In process, budget 400 tokens (the scripted model's tokens are code points plus an end token). Sample 1 pads its
// thinking to 390 tokens, over 95% of the budget: penalty 0.5 × 390/400 = 0.4875.
const MAX_TOKENS = 400;
const LONG_TOKENS = 390;
const padded = (text: string) => `<think>${'.'.repeat(LONG_TOKENS - 1 - text.length - '<think>'.length)}${text}`;

/** Four answers per record: exact; right direction 3 points off and long; wrong direction; no thinking block. */
const trainingAnswers = (r: FundamentalRecord) => [
  THINK + sentence(r, r.answer, String(r.magnitude)),
  padded(`</think>\n${sentence(r, r.answer, plus(r.magnitude, 3))}`),
  THINK + sentence(r, otherDirection(r), String(r.magnitude)),
  sentence(r, r.answer, String(r.magnitude)),
];
const trainingModel: Responder = (body) => ({
  choices: trainingAnswers(recordOfBody(body))
    .slice(0, body.n ?? 1)
    .map((text) => ({ text })),
});

/** In evaluate, one answer per record (by its index in the fixture), each scored by hand below. */
const EVAL_ANSWERS: ((r: FundamentalRecord) => string)[] = [
  (r) => THINK + sentence(r, 'raised', '4.5'), // revenue raised 4.5: exact → 2
  (r) => THINK + sentence(r, 'reduced', '-12.3'), // EPS reduced 12.3: signed, 24.6 off → 1 + 0
  (r) => THINK + sentence(r, 'raised', '2'), // dividend maintained: wrong direction → 0
  (r) => THINK + sentence(r, 'raised', '12'), // capex raised 9.5: 2.5 off → 1 + 0.7
  (r) => sentence(r, 'reduced', '3.2'), // gross margin reduced 3.2, no thinking block → 0, unformatted
  (r) => THINK + sentence(r, 'maintained', '0.5'), // NIM maintained 0: 0.5 off → 1 + 0.9
];
const evalModel: Responder = (body) => {
  const r = recordOfBody(body);
  return { choices: [{ text: EVAL_ANSWERS[FIXTURE_RECORDS.indexOf(r)]!(r) }] };
};

const scratch = useScratch('clotho-fundamentals-e2e-');
let data: string;
beforeAll(async () => {
  data = await writeFixture(scratch.dir, 'parquet');
});
const model = async (responder: Responder) => scratch.closeAfter(await startScriptedOpenAI({ responder }));

async function processWith(name: string, extra: string[]) {
  const scripted = await model(trainingModel);
  const { groups } = await runProcess(
    [
      ENV,
      '--env.data_path',
      data,
      '--env.total_steps',
      '3',
      '--env.group_size',
      '4',
      '--env.max_token_length',
      String(MAX_TOKENS),
      '--openai.base_url',
      scripted.baseUrl,
      '--store',
      scratch.path(`store-${name}`),
      ...extra,
    ],
    scratch.path(`${name}.jsonl`),
    3,
  );
  for (const group of groups) {
    const record = recordOf(userText(group.messages![0]!))!;
    expect(record).toBeDefined();
    // The samples came back in the order the model gave them, and sample 1 was as long as planned.
    expect(group.messages!.map((m) => String(m.at(-1)!.content))).toEqual(trainingAnswers(record));
    expect(encodeCompletion(trainingAnswers(record)[1]!)).toHaveLength(LONG_TOKENS);
  }
  return groups;
}

describe('fundamental_prediction', () => {
  it('process: +1 for the right direction (long or not), -1 for a wrong one or a broken format', async () => {
    const groups = await processWith('binary', []);
    for (const group of groups) expect(group.scores).toEqual([1, 1, -1, -1]);
  });

  it('process with binary_reward false: 1 + magnitude bonus, minus the length penalty of the long answer', async () => {
    const groups = await processWith('graded', ['--env.binary_reward', 'false']);
    for (const group of groups) expect(group.scores).toEqual([2, 1 + 0.7 - 0.5 * (LONG_TOKENS / MAX_TOKENS), 0, 0]);
  });

  it('evaluate: direction accuracy, magnitude accuracy over right directions, and the combined score', async () => {
    const scripted = await model(evalModel);
    const { metrics, samples, stdout } = await runEvaluate(
      [ENV, '--env.data_path', data, '--env.split', 'all', '--env.seed', 'None', '--items', '6', '--openai.base_url', scripted.baseUrl],
      scratch.path('evals'),
    );
    expect(Object.keys(metrics).sort()).toEqual([
      'combined_score',
      'direction_accuracy',
      'formatted',
      'items',
      'magnitude_accuracy',
      'score',
    ]);
    expect(metrics.items).toBe(6);
    expect(metrics.score).toBeCloseTo((2 + 1 + 0 + 1.7 + 0 + 1.9) / 6, 12);
    expect(metrics.combined_score).toBeCloseTo(metrics.score!, 12);
    expect(metrics.direction_accuracy).toBeCloseTo(4 / 6, 12);
    expect(metrics.magnitude_accuracy).toBeCloseTo((1 + 0 + 0.7 + 0.9) / 4, 12);
    expect(metrics.formatted).toBeCloseTo(5 / 6, 12);
    expect(stdout).toContain('"direction_accuracy"');
    expect(samples.map((s) => s.score)).toEqual([2, 1, 0, 1.7, 0, 1.9]);
  });

  it('process on the embedded engine: a well-formed group of token ids, masks and logprobs', async () => {
    const group = await processEngineGroup(
      [ENV, '--env.data_path', data, '--store', scratch.path('store-engine')],
      scratch.path('engine.jsonl'),
      16,
    );
    // 16 random tokens never hold a thinking block and the answer sentence.
    expect(group.scores).toEqual([-1, -1]);
    expect(recordOf(userText(group.messages![0]!))).toBeDefined();
    expectWellFormedGroup(group, { maxTrained: 16 });
  });
});
