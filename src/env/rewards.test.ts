import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineEnvironment, fromItems, type ScoreContext } from './define.js';
import { combineRewards, defineReward, REWARD_FUNCTIONS, rewardSpecsField, toScoreResult } from './rewards.js';
import { playEpisode } from './testing.js';

/** What the built-ins read of a trajectory: its completion and its item's gold answer. */
const trajectory = (completion: string, answer: unknown) => ({ completion, item: { answer } }) as ScoreContext<unknown, unknown>;
const RIGHT_FORMATTED = trajectory('<think>9 * 2 = 18</think>\\boxed{18}', '#### 18');
const WRONG_PLAIN = trajectory('It is \\boxed{17}.', '#### 18');

describe('the registry', () => {
  it('holds the built-ins, each with a description and parameter defaults', () => {
    expect(Object.keys(REWARD_FUNCTIONS)).toEqual(['accuracy', 'format', 'length', 'repetition_penalty', 'cosine_scaled']);
    for (const [name, definition] of Object.entries(REWARD_FUNCTIONS)) {
      expect(definition.name).toBe(name);
      expect(definition.description.length).toBeGreaterThan(20);
      expect(() => z.strictObject(definition.params).parse({})).not.toThrow();
    }
  });
});

describe('combineRewards', () => {
  it("sums the weighted values and reports each function's own value as its metric", async () => {
    const combined = combineRewards([
      'accuracy',
      { name: 'format', weight: 0.5 },
      { type: 'length', weight: 0.25, params: { max_length: 16 } },
    ]);
    expect(combined.metrics).toEqual(['accuracy', 'format', 'length']);
    expect(combined.needsAnswer).toBe(true);
    // Right and formatted, 35 characters against max_length 16 (free up to 8): length 0.
    expect(await combined.score(RIGHT_FORMATTED)).toEqual({ score: 1.5, metrics: { accuracy: 1, format: 1, length: 0 } });
    // Wrong, unformatted, 17 characters: 1 - (17 - 8) / 8 clipped to 0.
    expect(await combined.score(WRONG_PLAIN)).toEqual({ score: 0, metrics: { accuracy: 0, format: 0, length: 0 } });
    expect(await combined.score(trajectory('\\boxed{18}', 18))).toEqual({
      score: 1.1875,
      metrics: { accuracy: 1, format: 0, length: 0.75 },
    });
  });

  it('divides by the total weight with normalization "sum", as Atropos\'s dataset environment does', async () => {
    const combined = combineRewards(
      [
        { name: 'accuracy', weight: 3 },
        { name: 'format', weight: 1 },
      ],
      { normalization: 'sum' },
    );
    expect((await combined.score(RIGHT_FORMATTED)).score).toBe(1);
    expect((await combined.score({ ...RIGHT_FORMATTED, item: { answer: '19' } })).score).toBe(0.25);
  });

  it('takes negative weights and penalties as they are', async () => {
    const combined = combineRewards([
      { name: 'accuracy', correct_reward: 1, incorrect_reward: -1 },
      { name: 'repetition_penalty', weight: 2 },
    ]);
    expect(await combined.score(trajectory('a b c a b c a b \\boxed{17}', '18'))).toEqual({
      score: -1 + 2 * -(1 - 4 / 7),
      metrics: { accuracy: -1, repetition_penalty: -(1 - 4 / 7) },
    });
  });

  it('keeps two uses of one function apart by their metric names', async () => {
    const combined = combineRewards([
      { name: 'format', metric: 'thinks' },
      { name: 'format', metric: 'answer_tag', pattern: '<answer>.+</answer>', weight: -1 },
    ]);
    expect(combined.needsAnswer).toBe(false);
    expect(await combined.score(trajectory('<think>x</think><answer>5</answer>', null))).toEqual({
      score: 0,
      metrics: { thinks: 1, answer_tag: 1 },
    });
  });

  it('reports every bad entry at once, with its place in the list', () => {
    let message = '';
    try {
      combineRewards([
        'acuracy',
        { name: 'repetition_penalty', ngram: 2 },
        { name: 'repetition_penalty', max_penalty: 1 },
        { name: 'format', pattern: '(' },
        { name: 'format', pattern: 'x', preferred_tags: ['think'] },
        'accuracy',
        'accuracy',
        { name: 'length', type: 'length' },
        { weight: 2 },
      ]);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(
      message
        .split('\n')
        .slice(1)
        .map((line) => line.trim()),
    ).toEqual([
      'reward_fns[0]: unknown reward function "acuracy"; known: accuracy, format, length, repetition_penalty, cosine_scaled',
      'reward_fns[1].ngram: repetition_penalty has no parameter "ngram" (its parameters: ngram_size, max_penalty)',
      expect.stringMatching(/^reward_fns\[2\]\.max_penalty: repetition_penalty: .*0/),
      expect.stringMatching(/^reward_fns\[3\]: format: Invalid regular expression/),
      'reward_fns[4]: format: give pattern or preferred_tags, not both',
      'reward_fns[6]: a second reward named "accuracy": give one its own "metric"',
      'reward_fns[7]: give name or type, not both',
      "reward_fns[8]: missing the reward function's name",
    ]);
    expect(() => combineRewards([])).toThrow('name at least one reward function');
  });

  it("uses a registry of the caller's own", async () => {
    const registry = {
      ...REWARD_FUNCTIONS,
      shouts: defineReward({
        name: 'shouts',
        description: 'the share of capital letters',
        params: { min: z.number().default(0) },
        create:
          ({ min }) =>
          ({ completion }) =>
            Math.max(min, completion.replace(/[^A-Z]/g, '').length / completion.length),
      }),
    };
    const combined = combineRewards(['shouts', { name: 'accuracy', weight: 2 }], { registry });
    expect(await combined.score(trajectory('AB\\boxed{1}', 1))).toEqual({
      score: 2 + 2 / 11,
      metrics: { shouts: 2 / 11, accuracy: 1 },
    });
  });
});

describe("an environment's score as a list of reward functions", () => {
  const base = {
    name: 'sums',
    description: 'sums',
    config: { bonus: z.number().default(0.5) },
    load: async () => fromItems([{ answer: 18 }]),
    prompt: () => [],
    initialState: () => ({ tries: 2 }),
    parse: (completion: string) => Number(completion.match(/\d+/)?.[0] ?? NaN),
  };

  it('sees what score sees, weighs built-ins and its own functions alike, and reports each named one', async () => {
    const sums = defineEnvironment({
      ...base,
      score: [
        { name: 'correct', weight: 2, reward: ({ item, parsed }) => (parsed === item.answer ? 1 : 0) },
        { name: 'bonus', reward: ({ config, state }) => config.bonus / state.tries },
        // Unnamed, async, with metrics of its own: counted in the score, reported by its metrics only.
        { reward: async () => ({ score: -1, metrics: { baseline: 1 } }) },
        { name: 'format', weight: 0, params: { pattern: '^\\d+$' } },
      ],
    });
    const play = (reply: string) => playEpisode(sums, { item: { answer: 18 }, replies: [reply] });
    expect(await play('18')).toMatchObject({ score: 2 + 0.25 - 1, metrics: { correct: 1, bonus: 0.25, baseline: 1, format: 1 } });
    expect(await play('17 apples')).toMatchObject({ score: 0.25 - 1, metrics: { correct: 0, bonus: 0.25, baseline: 1, format: 0 } });
  });

  it('scores a function alone exactly as the list of that one function, unnamed (no metrics is an empty set)', async () => {
    const context = trajectory('\\boxed{18}', 18);
    for (const fn of [() => 0.75, () => ({ score: -1, metrics: { steps: 3 } })]) {
      expect(await combineRewards([{ reward: fn }]).score(context)).toEqual({ metrics: {}, ...toScoreResult(fn()) });
    }
  });

  it('is checked when the environment is defined, each bad entry named', () => {
    expect(() =>
      defineEnvironment({
        ...base,
        score: [
          'acuracy',
          { name: 'ok', weight: Number.NaN, reward: () => 1 },
          { name: 'ok', reward: () => 1 },
          { name: 'ok', reward: () => 0 },
        ],
      }),
    ).toThrow(
      [
        'invalid reward functions:',
        '  sums.score[0]: unknown reward function "acuracy"; known: accuracy, format, length, repetition_penalty, cosine_scaled',
        '  sums.score[1].weight: a finite number',
        '  sums.score[3]: a second reward named "ok": give one another name',
      ].join('\n'),
    );
  });
});

describe('rewardSpecsField', () => {
  const field = rewardSpecsField(['accuracy']);

  it('defaults, and reads a list, JSON text or names separated by commas', () => {
    expect(field.parse(undefined)).toEqual(['accuracy']);
    expect(field.parse(['accuracy', { name: 'format', weight: 0.5 }])).toEqual(['accuracy', { name: 'format', weight: 0.5 }]);
    expect(field.parse('[{"name":"length","max_length":10}]')).toEqual([{ name: 'length', max_length: 10 }]);
    expect(field.parse('accuracy, format')).toEqual(['accuracy', 'format']);
  });

  it('reports bad entries as issues at their place', () => {
    const result = field.safeParse(['accuracy', { name: 'length', max_length: -1 }, 'nope']);
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((issue) => issue.path)).toEqual([[1, 'max_length'], [2]]);
  });
});
