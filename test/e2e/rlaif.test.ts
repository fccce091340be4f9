import { beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_QUESTIONS, writeFixture } from '../../environments/rlaif/fixture.js';
import { startLocalEngine, type RunningLocalEngine } from '../../src/inference/local/start.js';
import type { Message } from '../../src/schema/scored-data.js';
import { runEvaluate, runProcess, useScratch } from '../support/runs.js';
import { startScriptedOpenAI, type Responder, type ScriptedBody, type ScriptedChoice } from '../support/scripted-openai.js';

const ENV = './environments/rlaif/index.ts';
const lastUser = (messages: Message[]) => String(messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
const itemOf = (messages: Message[]) => FIXTURE_QUESTIONS.indexOf(lastUser(messages));
const bodyMessages = (body: ScriptedBody) => (body as { messages: Message[] }).messages;
/** The mean of a metric on the run's last progress line (`· votes 4.000`), the final one. */
const progressMetric = (stdout: string, name: string) => Number([...stdout.matchAll(new RegExp(`· ${name} (-?[\\d.]+)`, 'g'))].at(-1)?.[1]);

// The scripted judge prefers [good] to anything, anything to [bad], and gives no verdict between equals; the last
// vote of each request never has one. Three votes in each order: the better response gets 4 of 6, 2 unreadable.
const GOOD = '[good]';
const BAD = '[bad]';
const rank = (text: string) => (text.includes(GOOD) ? 1 : text.includes(BAD) ? -1 : 0);
const section = (text: string, from: string, to: string) => text.split(from)[1]!.split(to)[0]!;
const judgeResponder: Responder = (body) => {
  const text = String(bodyMessages(body)[1]!.content);
  const [a, b] = [rank(section(text, '[Response A]', '[Response B]')), rank(section(text, '[Response B]', '[End of responses]'))];
  const verdict = a === b ? 'Equally good.' : `<think>weighing</think>\\boxed{${a > b ? 'A' : 'B'}}`;
  const n = body.n ?? 1;
  return { choices: Array.from({ length: n }, (_, i) => ({ text: i === n - 1 ? 'I cannot decide.' : verdict })) };
};

/** In process, groups of two: bakery good then bad; boiling point bad then good; haiku with its second answer cut off. */
const TRAINING: ScriptedChoice[][] = [
  [{ text: `${GOOD} Sourdough Sunrise` }, { text: `${BAD} Bread Place` }],
  [{ text: `${BAD} 100` }, { text: `${GOOD} 212 °F` }],
  [{ text: 'Rain on red maples' }, { text: 'Rain', finishReason: 'length' }],
];
const trainingPolicy: Responder = (body) => ({ choices: TRAINING[itemOf(bodyMessages(body))]!.slice(0, body.n ?? 1) });
/** In evaluate, one answer per item, judged against the item's reference reply (the haiku has none). */
const EVALUATION = [`${GOOD} Sourdough Sunrise`, `${BAD} 100`, 'Rain on red maples'];
const evaluationPolicy: Responder = (body) => ({ choices: [{ text: EVALUATION[itemOf(bodyMessages(body))]! }] });

const scratch = useScratch('clotho-rlaif-e2e-');
let data: string;
let engine: RunningLocalEngine;
const scripted = async (responder: Responder) => scratch.closeAfter(await startScriptedOpenAI({ responder }));
beforeAll(async () => {
  data = await writeFixture(scratch.dir, 'parquet');
  engine = scratch.closeAfter(await startLocalEngine({ model: 'generate:tiny', port: 0, slots: 2, threads: 1 }));
}, 120_000);

describe('rlaif with a scripted judge', () => {
  it('process: each pair judged forward and reversed, scores from the votes, a cut-off answer −1', async () => {
    const [policy, judge] = [await scripted(trainingPolicy), await scripted(judgeResponder)];
    const { groups, stdout } = await runProcess(
      [
        ENV,
        '--env.data_path',
        data,
        '--env.total_steps',
        '3',
        '--env.group_size',
        '2',
        '--env.judge_max_tokens',
        '64',
        '--openai.base_url',
        policy.baseUrl,
        '--judge.base_url',
        judge.baseUrl,
        '--judge.model_name',
        'judge-model',
        '--store',
        scratch.path('store-process'),
      ],
      scratch.path('process.jsonl'),
      3,
    );
    const scores = Object.fromEntries(groups.map((g) => [itemOf(g.messages![0]!), g.scores]));
    // 4 of 6 votes for the better answer, 2 without a verdict: preference 5/6, score ±1/3.
    expect(scores[0]![0]).toBeCloseTo(1 / 3, 12);
    expect(scores[0]![1]).toBeCloseTo(-1 / 3, 12);
    expect(scores[1]![0]).toBeCloseTo(-1 / 3, 12);
    expect(scores[1]![1]).toBeCloseTo(1 / 3, 12);
    // The haiku has no reference, so its one finished answer is compared with nothing.
    expect(scores[2]).toEqual([0, -1]);
    // Group means: votes (6 + 6 + 0) / 3, unreadable (2 + 2 + 0) / 3, cut off (0 + 0 + 1/2) / 3.
    expect(progressMetric(stdout, 'votes')).toBe(4);
    expect(progressMetric(stdout, 'unparsed_votes')).toBeCloseTo(4 / 3, 3);
    expect(progressMetric(stdout, 'truncated')).toBeCloseTo(1 / 6, 3);

    const asked = judge.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as Record<string, unknown>);
    expect(asked).toHaveLength(4);
    for (const body of asked) expect(body).toMatchObject({ model: 'judge-model', n: 3, temperature: 1, max_tokens: 64 });
    const shown = asked.map((b) => section(String((b.messages as Message[])[1]!.content), '[Response A]', '[Response B]').trim());
    expect(shown.sort()).toEqual([`${BAD} 100`, `${BAD} Bread Place`, `${GOOD} 212 °F`, `${GOOD} Sourdough Sunrise`]);
  });

  it('evaluate: one answer per item against the reference reply, win_rate, and 0 unjudged without one', async () => {
    const [policy, judge] = [await scripted(evaluationPolicy), await scripted(judgeResponder)];
    const { metrics, samples } = await runEvaluate(
      [ENV, '--env.data_path', data, '--items', '3', '--openai.base_url', policy.baseUrl, '--judge.base_url', judge.baseUrl],
      scratch.path('evals'),
    );
    // Bakery beats the reference (5/6), the boiling point loses to it (1/6); the haiku is not judged.
    expect(Object.keys(metrics).sort()).toEqual(['items', 'score', 'truncated', 'unparsed_votes', 'votes', 'win_rate']);
    expect(metrics.items).toBe(3);
    expect(metrics.score).toBeCloseTo(0, 12);
    expect(metrics.win_rate).toBeCloseTo(0.5, 12);
    expect(metrics.votes).toBe(4);
    expect(metrics.unparsed_votes).toBeCloseTo(4 / 3, 12);
    expect(samples.map((s) => s.score)).toEqual([expect.closeTo(1 / 3, 12), expect.closeTo(-1 / 3, 12), 0]);
    expect(samples.map((s) => s.metrics.win_rate)).toEqual([expect.closeTo(5 / 6, 12), expect.closeTo(1 / 6, 12), undefined]);
    expect(judge.requests.filter((r) => r.path === '/v1/chat/completions')).toHaveLength(4);
  });
});

describe('rlaif with the embedded engine as the judge', () => {
  // Random weights give no verdicts: every vote should be counted, as unreadable, and the scores stay in range.
  it('process: groups scored in range, every vote counted', async () => {
    const policy = await scripted(trainingPolicy);
    const { groups, stdout } = await runProcess(
      [
        ENV,
        '--env.data_path',
        data,
        '--env.total_steps',
        '2',
        '--env.group_size',
        '2',
        '--env.judge_votes',
        '2',
        '--env.judge_max_tokens',
        '8',
        '--openai.base_url',
        policy.baseUrl,
        '--judge.base_url',
        engine.baseUrl,
        '--judge.model_name',
        engine.modelName,
        '--store',
        scratch.path('store-engine'),
      ],
      scratch.path('engine.jsonl'),
      2,
    );
    expect(groups.map((g) => itemOf(g.messages![0]!)).sort()).toEqual([0, 1]);
    for (const group of groups) {
      expect(group.scores).toHaveLength(2);
      for (const score of group.scores) expect(Math.abs(score)).toBeLessThanOrEqual(0.5);
      expect(group.scores[0]! + group.scores[1]!).toBeCloseTo(0, 12);
    }
    // One pair per group, two orders, two votes: 4 votes, none of them a verdict (8 random tokens never spell
    // \boxed{A}), all counted as unreadable; so no preference either way.
    expect(progressMetric(stdout, 'votes')).toBe(4);
    expect(progressMetric(stdout, 'unparsed_votes')).toBe(4);
    for (const group of groups) expect(group.scores).toEqual([0, 0]);
  });

  it('evaluate: each answer judged against its reference by the engine', async () => {
    const policy = await scripted(evaluationPolicy);
    const { metrics } = await runEvaluate(
      [
        ENV,
        '--env.data_path',
        data,
        '--items',
        '2',
        '--env.judge_votes',
        '2',
        '--env.judge_max_tokens',
        '8',
        '--openai.base_url',
        policy.baseUrl,
        '--judge.base_url',
        engine.baseUrl,
      ],
      scratch.path('engine-evals'),
    );
    expect(metrics).toEqual({ items: 2, votes: 4, unparsed_votes: 4, truncated: 0, score: 0, win_rate: 0.5 });
  });
});
