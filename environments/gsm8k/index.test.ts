import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, playEpisode, resolveEnvConfig } from 'clotho';
import gsm8k, { GSM8K_TEST_FILE as GSM8K_TEST, SYSTEM_PROMPT, type Gsm8kItem } from './index.js';

const rows = readFileSync(GSM8K_TEST, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as { question: string; answer: string });
const configFor = (argv: string[]) => resolveEnvConfig(gsm8k, argv);
const scoreOf = async (item: Gsm8kItem, completion: string) => {
  const { score, metrics } = await playEpisode(gsm8k, { item, replies: [completion] });
  return { score, metrics };
};

describe('gsm8k config', () => {
  it('defaults to Atropos’s group size and token budget, reading the train split', () => {
    expect(configFor([])).toMatchObject({ group_size: 8, max_token_length: 1024, split: 'train', data_path: null });
  });

  it('takes its own flags and rejects a bad split', () => {
    expect(configFor(['--env.data_path', GSM8K_TEST, '--env.split=test'])).toMatchObject({ data_path: GSM8K_TEST, split: 'test' });
    expect(() => configFor(['--env.split', 'dev'])).toThrow(ConfigError);
  });
});

describe('gsm8k data', () => {
  const saved = process.env.CLOTHO_HOME;
  afterEach(() => {
    if (saved === undefined) delete process.env.CLOTHO_HOME;
    else process.env.CLOTHO_HOME = saved;
  });

  it('loads the real test set and addresses items by index', async () => {
    const source = await gsm8k.load(configFor(['--env.data_path', GSM8K_TEST]));
    expect(source.size).toBe(1319);
    expect(source.get(0)).toEqual({ question: rows[0]!.question, answer: 18 });
    expect(source.get(1318).question).toBe(rows[1318]!.question);
  });

  it('reads the cached copy of the train split when no path is given', async () => {
    const home = mkdtempSync(join(tmpdir(), 'clotho-gsm8k-'));
    mkdirSync(join(home, 'datasets'));
    writeFileSync(
      join(home, 'datasets', 'gsm8k-train.jsonl'),
      `${JSON.stringify({ question: 'What is 2 + 2?', answer: '2 + 2 = 4\n#### 4' })}\n`,
    );
    process.env.CLOTHO_HOME = home;
    const source = await gsm8k.load(configFor([]));
    expect(source.size).toBe(1);
    expect(source.get(0)).toEqual({ question: 'What is 2 + 2?', answer: 4 });
  });

  it('reads the test split it ships with, not a cached or downloaded one, when no path is given', async () => {
    const home = mkdtempSync(join(tmpdir(), 'clotho-gsm8k-'));
    mkdirSync(join(home, 'datasets'));
    writeFileSync(
      join(home, 'datasets', 'gsm8k-test.jsonl'),
      `${JSON.stringify({ question: 'What is 2 + 2?', answer: '2 + 2 = 4\n#### 4' })}\n`,
    );
    process.env.CLOTHO_HOME = home;
    const source = await gsm8k.load(configFor(['--env.split', 'test']));
    expect(source.size).toBe(1319);
    expect(source.get(0)).toEqual({ question: rows[0]!.question, answer: 18 });
  });

  it('names the line of a solution without a gold answer', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'clotho-gsm8k-')), 'bad.jsonl');
    writeFileSync(
      path,
      `${JSON.stringify({ question: 'q', answer: '#### 1' })}\n${JSON.stringify({ question: 'q', answer: 'no gold' })}\n`,
    );
    await expect(gsm8k.load(configFor(['--env.data_path', path]))).rejects.toThrow(`${path}:2: answer: no "#### <number>" line`);
  });
});

describe('gsm8k prompt and reward', () => {
  const item: Gsm8kItem = { question: rows[0]!.question, answer: 18 };

  it('asks for reasoning and a boxed answer, then the question', () => {
    const messages = gsm8k.prompt(item, configFor([]));
    expect(messages).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: item.question },
    ]);
    expect(SYSTEM_PROMPT).toMatch(/step by step/);
    expect(SYSTEM_PROMPT).toContain('\\boxed{}');
  });

  it('scores the right number +1, a wrong or missing one -1', async () => {
    expect(await scoreOf(item, '16 - 3 - 4 = 9 eggs, 9 * 2 = 18. \\boxed{18}')).toEqual({ score: 1, metrics: { correct: 1, answered: 1 } });
    expect(await scoreOf(item, 'So she makes \\boxed{\\$18.00}')).toMatchObject({ score: 1 });
    expect(await scoreOf(item, '16 - 3 = 13, 13 * 2 = 26. \\boxed{26}')).toEqual({ score: -1, metrics: { correct: 0, answered: 1 } });
    expect(await scoreOf(item, 'I am not sure.')).toEqual({ score: -1, metrics: { correct: 0, answered: 0 } });
    expect(await scoreOf(item, '<think>9 * 2 = 18')).toMatchObject({ score: -1 });
  });

  it('scores every reference solution of the test set +1', async () => {
    const source = await gsm8k.load(configFor(['--env.data_path', GSM8K_TEST]));
    const scores = await Promise.all(rows.map(async (row, i) => (await scoreOf(source.get(i), row.answer)).score));
    expect(scores.every((s) => s === 1)).toBe(true);
  });
});
