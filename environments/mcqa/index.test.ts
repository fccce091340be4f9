import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, playEpisode, resolveEnvConfig, type ScoreContext } from 'clotho';
import { mmluJsonl, mmluParquet } from './fixtures.js';
import mcqa, { questionText, subjectMetric, SYSTEM_PROMPT, type McqaItem } from './index.js';

const configFor = (argv: string[] = []) => resolveEnvConfig(mcqa, argv);
const ITEM: McqaItem = {
  subject: 'high_school_geography',
  question: 'What is the capital of France?',
  choices: ['Lyon', 'Paris', 'Nice', 'Lille'],
  answer: 1,
};

/** What `score` sees for one trajectory, as a rollout builds it (a finish reason included, which evaluation lacks). */
async function scoreOf(item: McqaItem, completion: string, finishReason = 'stop') {
  const config = configFor();
  const messages = [...mcqa.prompt(item, config), { role: 'assistant', content: completion }];
  const base = {
    item,
    config,
    sample: 0,
    toolCalls: [],
    malformedToolCalls: [],
    messages,
    finishReason,
    state: null,
    signal: new AbortController().signal,
    heartbeat: () => undefined,
  };
  const parsed = await mcqa.parse(completion, item, base);
  const context: ScoreContext<McqaItem, string | null, typeof config, null> = {
    ...base,
    parsed,
    completion,
    turnRewards: [],
    judge: { complete: () => Promise.reject(new Error('no judge')) },
    group: null,
    judgements: {},
  };
  return mcqa.score(context);
}

describe('mcqa config', () => {
  it('defaults to all subjects of the test split, the threshold length penalty at half the budget', () => {
    expect(configFor()).toMatchObject({
      group_size: 8,
      data_path: null,
      split: 'test',
      subjects: null,
      format: 'auto',
      length_penalty: 'threshold',
      length_threshold_ratio: 0.5,
    });
  });

  it('takes subjects as a comma-separated flag and rejects bad values, naming each flag', () => {
    expect(configFor(['--env.subjects', 'anatomy, virology']).subjects).toEqual(['anatomy', 'virology']);
    expect(configFor(['--env.format', 'parquet', '--env.length_penalty', 'relative', '--env.split', 'dev'])).toMatchObject({
      format: 'parquet',
      length_penalty: 'relative',
      split: 'dev',
    });
    let error: unknown;
    try {
      configFor(['--env.format', 'xlsx', '--env.length_threshold_ratio', '2', '--env.split', 'train']);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const flag of ['--env.format', '--env.length_threshold_ratio', '--env.split']) expect(problems).toContain(flag);
  });
});

describe('mcqa data', () => {
  const saved = process.env.CLOTHO_HOME;
  afterEach(() => {
    if (saved === undefined) delete process.env.CLOTHO_HOME;
    else process.env.CLOTHO_HOME = saved;
  });

  it('loads a data_path and addresses items by index', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-mcqa-'));
    const other = {
      ...ITEM,
      subject: 'anatomy',
      question: 'Which bone is longest?',
      choices: ['Femur', 'Tibia', 'Ulna', 'Rib'],
      answer: 0,
    };
    await writeFile(join(dir, 'mmlu.jsonl'), mmluJsonl([ITEM, other]));
    const source = await mcqa.load(configFor(['--env.data_path', join(dir, 'mmlu.jsonl')]));
    expect(source.size).toBe(2);
    expect([source.get(0), source.get(1)]).toEqual([ITEM, other]);
    const anatomy = await mcqa.load(configFor(['--env.data_path', join(dir, 'mmlu.jsonl'), '--env.subjects', 'anatomy']));
    expect(anatomy.size).toBe(1);
  });

  it("reads the cached copy of the hub's split when no path is given", async () => {
    const home = await mkdtemp(join(tmpdir(), 'clotho-mcqa-'));
    await mkdir(join(home, 'datasets'));
    await writeFile(join(home, 'datasets', 'mmlu-dev.parquet'), mmluParquet([ITEM]));
    process.env.CLOTHO_HOME = home;
    const source = await mcqa.load(configFor(['--env.split', 'dev']));
    expect(source.size).toBe(1);
    expect(source.get(0)).toEqual(ITEM);
  });
});

describe('mcqa prompt', () => {
  it('asks for the letter, then gives the subject, the question and the lettered choices', () => {
    expect(mcqa.prompt(ITEM, configFor())).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: questionText(ITEM) },
    ]);
    expect(questionText(ITEM)).toBe(
      'The following is a multiple choice question about high school geography.\n\nWhat is the capital of France?\n\n' +
        'A. Lyon\nB. Paris\nC. Nice\nD. Lille\n\nAnswer with the letter of the correct choice: A, B, C or D.',
    );
    expect(SYSTEM_PROMPT).toContain('The answer is (X)');
  });

  it('letters as many choices as there are, and leaves out a missing subject', () => {
    const text = questionText({ subject: '', question: 'Pick one.', choices: ['1', '2', '3', '4', '5'], answer: 4 });
    expect(text).toMatch(/^The following is a multiple choice question\.\n/);
    expect(text).toContain('E. 5\n\nAnswer with the letter of the correct choice: A, B, C, D or E.');
  });
});

describe('mcqa reward', () => {
  const right = { score: 1, metrics: { accuracy: 1, accuracy_high_school_geography: 1, invalid: 0 } };
  const wrong = { score: -1, metrics: { accuracy: 0, accuracy_high_school_geography: 0, invalid: 0 } };
  const invalid = { score: -1, metrics: { accuracy: 0, accuracy_high_school_geography: 0, invalid: 1 } };

  it('scores the right letter +1, a wrong one -1, in any of the phrasings read', async () => {
    for (const reply of ['The answer is (B)', '\\boxed{B}', 'B.', '**B**', '<think>Lyon? No.</think>The answer is B']) {
      expect(await scoreOf(ITEM, reply), reply).toEqual(right);
    }
    expect(await scoreOf(ITEM, 'The answer is (A)')).toEqual(wrong);
  });

  it('scores a missing, ambiguous or unfinished answer -1 as invalid', async () => {
    for (const reply of ['Paris.', 'The answer is A. No, the answer is B.', '<think>It is B', 'The answer is (E)']) {
      expect(await scoreOf(ITEM, reply), reply).toEqual(invalid);
    }
  });

  it('scores a reply cut off by the token budget -1 as invalid, even when its letter was right', async () => {
    expect(await scoreOf(ITEM, 'The answer is (B)', 'length')).toEqual(invalid);
  });

  it('plays an episode through the SDK as a rollout does', async () => {
    const episode = await playEpisode(mcqa, { item: ITEM, replies: ['After some thought: the answer is (B).'] });
    expect(episode).toMatchObject({ parsed: 'B', score: 1, metrics: right.metrics });
  });

  it('names a metric after each subject, and none for an item without one', () => {
    expect(subjectMetric('abstract_algebra')).toBe('accuracy_abstract_algebra');
    expect(subjectMetric('High School Physics')).toBe('accuracy_high_school_physics');
    expect(subjectMetric('')).toBeNull();
  });
});

describe('mcqa length penalty', () => {
  const rescore = (argv: string[], scores: number[], completionTokens: number[]) =>
    mcqa.rescoreGroup!({
      scores,
      completionTokens,
      completions: scores.map(() => ''),
      finishReasons: scores.map(() => 'stop'),
      config: configFor(argv),
    });

  it('rescores a group whose answers are all right by length against max_token_length (threshold rule)', () => {
    expect(rescore(['--env.max_token_length', '1000'], [1, 1, 1, 1], [100, 500, 750, 1000])).toEqual([1, 1, 0.5, 0]);
    expect(rescore(['--env.max_token_length', '1000', '--env.length_threshold_ratio', '0.8'], [1, 1], [800, 900])).toEqual([1, 0.5]);
  });

  it('leaves a group with a wrong answer as it is', () => {
    expect(rescore(['--env.max_token_length', '1000'], [1, -1, 1], [100, 900, 1000])).toEqual([1, -1, 1]);
  });

  it('ranks by length within the group under the relative rule, and not at all with none', () => {
    expect(rescore(['--env.length_penalty', 'relative'], [1, 1, 1], [100, 200, 300]).map((s) => Math.round(s * 1e9) / 1e9)).toEqual([
      1, 0, -1,
    ]);
    expect(rescore(['--env.length_penalty', 'none'], [1, 1], [10, 2000])).toEqual([1, 1]);
  });
});
