import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, playEpisode, resolveEnvConfig } from 'clotho';
import dataset, { type DatasetItem } from './index.js';

const GSM8K_TEST = fileURLToPath(new URL('../gsm8k/data/test.jsonl', import.meta.url));
const configFor = (argv: string[]) => resolveEnvConfig(dataset, argv);
const loadAll = async (argv: string[]) => {
  const source = await dataset.load(configFor(argv));
  return Array.from({ length: source.size }, (_, i) => source.get(i));
};
const play = (item: DatasetItem, reply: string, argv: string[] = []) => playEpisode(dataset, { item, replies: [reply], argv });

// A small math table, as a real data set might hold it: a number column, LaTeX golds, a thousands separator.
const ROWS = [
  { question: 'What is half of one?', answer: '\\frac{1}{2}', level: 1 },
  { question: 'How many metres in a kilometre?', answer: '1,000', level: 1 },
  { question: 'Simplify $\\sqrt{8}$.', answer: '2\\sqrt{2}', level: 2 },
];
const ITEMS: DatasetItem[] = ROWS.map((r) => ({ prompt: r.question, answer: r.answer }));

let dir: string;
const paths: Record<'jsonl' | 'csv' | 'parquet' | 'headless', string> = { jsonl: '', csv: '', parquet: '', headless: '' };
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-dataset-'));
  paths.jsonl = join(dir, 'math.jsonl');
  await writeFile(paths.jsonl, ROWS.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const csv = (r: (typeof ROWS)[number]) => [r.question, r.answer, r.level].map((v) => `"${String(v).replace(/"/g, '""')}"`).join(',');
  paths.csv = join(dir, 'math.csv');
  await writeFile(paths.csv, `question,answer,level\n${ROWS.map(csv).join('\n')}\n`);
  paths.headless = join(dir, 'headless.csv');
  await writeFile(paths.headless, `${ROWS.map(csv).join('\n')}\n`);
  paths.parquet = join(dir, 'math.parquet');
  await writeFile(
    paths.parquet,
    Buffer.from(
      parquetWriteBuffer({
        columnData: [
          { name: 'question', data: ROWS.map((r) => r.question) },
          { name: 'answer', data: ROWS.map((r) => r.answer) },
          { name: 'level', data: ROWS.map((r) => BigInt(r.level)), type: 'INT64' },
        ],
      }),
    ),
  );
});

describe('dataset config', () => {
  it('defaults to the prompt and answer columns, chat format and accuracy', () => {
    expect(configFor([])).toMatchObject({
      data_path: null,
      prompt_field: 'prompt',
      answer_field: 'answer',
      format: 'chat',
      system_prompt: null,
      prompt_template: null,
      answer_pattern: null,
      reward_fns: ['accuracy'],
      reward_normalization: 'none',
      shuffle_seed: null,
    });
  });

  it('reads reward functions as JSON or as names separated by commas', () => {
    expect(configFor(['--env.reward_fns', 'accuracy,format']).reward_fns).toEqual(['accuracy', 'format']);
    expect(configFor(['--env.reward_fns', '[{"name":"length","weight":0.5,"max_length":300}]']).reward_fns).toEqual([
      { name: 'length', weight: 0.5, max_length: 300 },
    ]);
  });

  it("reads them from YAML too, in Clotho's form or Atropos's type/params form", async () => {
    const yaml = join(dir, 'rewards.yaml');
    await writeFile(
      yaml,
      [
        'env:',
        '  reward_fns:',
        '    - accuracy',
        '    - name: format',
        '      weight: 0.5',
        '    - type: cosine_scaled',
        '      weight: 2',
        '      params:',
        '        max_len: 400',
        '  reward_normalization: sum',
        '',
      ].join('\n'),
    );
    expect(configFor(['--config', yaml])).toMatchObject({
      reward_fns: ['accuracy', { name: 'format', weight: 0.5 }, { type: 'cosine_scaled', weight: 2, params: { max_len: 400 } }],
      reward_normalization: 'sum',
    });
  });

  it('rejects an unknown reward function, a bad parameter, a bad pattern and a bad format, all at once', () => {
    let problems: string[] = [];
    try {
      configFor([
        '--env.reward_fns',
        '["accuracy",{"name":"repetition_penalty","ngram":2},"nope"]',
        '--env.answer_pattern',
        '(',
        '--env.format',
        'text',
      ]);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      problems = (error as ConfigError).problems;
    }
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/reward_fns\.1\.ngram: repetition_penalty has no parameter "ngram"/);
    expect(problems.join('\n')).toMatch(/reward_fns\.2: unknown reward function "nope"/);
    expect(problems.join('\n')).toMatch(/--env\.answer_pattern: .*got "\("/);
    expect(problems.join('\n')).toMatch(/--env\.format: expected one of chat, completion, got "text"/);
  });
});

describe('dataset loading', () => {
  it('reads the same items from JSON lines, CSV (with or without a header) and Parquet', async () => {
    const flags = ['--env.prompt_field', 'question'];
    expect(await loadAll(['--env.data_path', paths.jsonl, ...flags])).toEqual(ITEMS);
    expect(await loadAll(['--env.data_path', paths.csv, ...flags])).toEqual(ITEMS);
    expect(await loadAll(['--env.data_path', paths.headless, ...flags, '--env.csv_columns', '["question","answer","level"]'])).toEqual(
      ITEMS,
    );
    expect(await loadAll(['--env.data_path', paths.parquet, ...flags])).toEqual(ITEMS);
    const copy = join(dir, 'math.data');
    await writeFile(copy, await readFile(paths.parquet));
    expect(await loadAll(['--env.data_path', copy, '--env.data_format', 'parquet', ...flags])).toEqual(ITEMS);
  });

  it('fills a prompt template from any column, Parquet integers and literal braces included', async () => {
    const template = 'Level {level} ({{hard}}): {question} Answer in \\boxed{{}}.';
    const items = await loadAll(['--env.data_path', paths.parquet, '--env.prompt_template', template]);
    expect(items[2]!.prompt).toBe('Level 2 ({hard}): Simplify $\\sqrt{8}$. Answer in \\boxed{}.');
  });

  it('takes the gold answer out of its field with answer_pattern', async () => {
    const items = await loadAll(['--env.data_path', GSM8K_TEST, '--env.prompt_field', 'question', '--env.answer_pattern', '####\\s*(.+)$']);
    expect(items).toHaveLength(1319);
    expect(items[0]).toEqual({ prompt: expect.stringMatching(/^Janet’s ducks lay 16 eggs/), answer: '18' });
    expect(items.filter((item) => String(item.answer).includes(','))).not.toHaveLength(0);
  });

  it('names the rows that lack a column, a gold answer, or a match of the pattern', async () => {
    const path = join(dir, 'bad.jsonl');
    await writeFile(
      path,
      [{ q: 'a', answer: '#### 1' }, { question: 'b', answer: '#### 2' }, { question: 'c' }, { question: 'd', answer: 'two' }]
        .map((r) => JSON.stringify(r))
        .join('\n'),
    );
    await expect(
      dataset.load(configFor(['--env.data_path', path, '--env.prompt_field', 'question', '--env.answer_pattern', '####\\s*(.+)'])),
    ).rejects.toThrow(
      [
        `invalid data in ${path}:`,
        '  row 1: no field "question" (columns: q, answer)',
        '  row 3: no gold answer in "answer"',
        '  row 4: answer does not match /####\\s*(.+)/',
      ].join('\n'),
    );
    // Without a reward that reads it, a row need not have a gold answer.
    const partial = join(dir, 'partial.jsonl');
    await writeFile(partial, `${JSON.stringify({ question: 'c' })}\n${JSON.stringify({ question: 'd', answer: 'two' })}\n`);
    const items = await loadAll(['--env.data_path', partial, '--env.prompt_field', 'question', '--env.reward_fns', 'format,length']);
    expect(items).toEqual([
      { prompt: 'c', answer: null },
      { prompt: 'd', answer: 'two' },
    ]);
    await expect(
      loadAll(['--env.data_path', path, '--env.prompt_template', '{question} / {topic}', '--env.reward_fns', 'format']),
    ).rejects.toThrow('row 1: no field "question", "topic" (columns: q, answer)');
  });

  it('asks for a data path, and for an answer column when a reward reads one', async () => {
    await expect(dataset.load(configFor([]))).rejects.toThrow('pass --env.data_path');
    await expect(dataset.load(configFor(['--env.data_path', paths.jsonl, '--env.answer_field', 'None']))).rejects.toThrow(
      'reward functions accuracy read a gold answer; set --env.answer_field',
    );
    await expect(dataset.load(configFor(['--env.data_path', join(dir, 'missing.jsonl')]))).rejects.toThrow('dataset file not found');
  });

  it('shuffles the same way for the same seed', async () => {
    const flags = ['--env.data_path', GSM8K_TEST, '--env.prompt_field', 'question'];
    const plain = await loadAll(flags);
    const once = await loadAll([...flags, '--env.shuffle_seed', '7']);
    expect(await loadAll([...flags, '--env.shuffle_seed', '7'])).toEqual(once);
    expect(once).not.toEqual(plain);
    expect(new Set(once.map((i) => i.prompt))).toEqual(new Set(plain.map((i) => i.prompt)));
  });

  describe('from a URL', () => {
    let server: Server;
    let requests = 0;
    beforeAll(async () => {
      server = createServer((_, res) => {
        requests++;
        res.end(ROWS.map((r) => JSON.stringify(r)).join('\n'));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      process.env.CLOTHO_HOME = await mkdtemp(join(tmpdir(), 'clotho-dataset-home-'));
    });
    const saved = process.env.CLOTHO_HOME;
    afterAll(async () => {
      if (saved === undefined) delete process.env.CLOTHO_HOME;
      else process.env.CLOTHO_HOME = saved;
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it('downloads it once into the cache', async () => {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/data/math.jsonl`;
      const flags = ['--env.data_path', url, '--env.prompt_field', 'question'];
      expect(await loadAll(flags)).toEqual(ITEMS);
      expect(await loadAll(flags)).toEqual(ITEMS);
      expect(requests).toBe(1);
    });
  });
});

describe('dataset prompt', () => {
  const item = ITEMS[0]!;
  it('puts the system prompt in its own turn in chat format, before the prompt in one turn in completion format', () => {
    expect(dataset.prompt(item, configFor([]))).toEqual([{ role: 'user', content: item.prompt }]);
    expect(dataset.prompt(item, configFor(['--env.system_prompt', 'Be brief.']))).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: item.prompt },
    ]);
    expect(dataset.prompt(item, configFor(['--env.system_prompt', 'Be brief.', '--env.format', 'completion']))).toEqual([
      { role: 'user', content: `Be brief.\n\n${item.prompt}` },
    ]);
  });
});

describe('dataset scoring', () => {
  it('scores accuracy by default, math-aware, with its value as a metric', async () => {
    expect(await play(ITEMS[0]!, 'Half of one is \\boxed{0.5}.')).toMatchObject({ score: 1, metrics: { accuracy: 1 }, parsed: '0.5' });
    expect(await play(ITEMS[1]!, 'There are 1000 metres in a kilometre.')).toMatchObject({ score: 1, metrics: { accuracy: 1 } });
    expect(await play(ITEMS[2]!, '\\boxed{\\sqrt{8}}')).toMatchObject({ score: 1 });
    expect(await play(ITEMS[2]!, '\\boxed{2.83}')).toMatchObject({ score: 0, metrics: { accuracy: 0 } });
  });

  it("scores a weighted combination, each function's value a metric", async () => {
    const argv = [
      '--env.reward_fns',
      JSON.stringify([
        { name: 'accuracy', weight: 2 },
        { name: 'format', weight: 0.5 },
        { name: 'length', weight: 1, max_length: 64, threshold_ratio: 0.5 },
      ]),
    ];
    // 42 characters against max_length 64, free up to 32: length 1 - (42 - 32) / 32.
    const right = '<think>1 / 2 = 0.5</think> \\boxed{\\frac12}';
    expect(right).toHaveLength(42);
    expect(await play(ITEMS[0]!, right, argv)).toMatchObject({
      score: 2 + 0.5 + 0.6875,
      metrics: { accuracy: 1, format: 1, length: 0.6875 },
    });
    expect(await play(ITEMS[0]!, 'No idea.', argv)).toMatchObject({ score: 1, metrics: { accuracy: 0, format: 0, length: 1 } });
    const normalized = await play(ITEMS[0]!, right, [...argv, '--env.reward_normalization', 'sum']);
    expect(normalized.score).toBe((2 + 0.5 + 0.6875) / 3.5);
  });

  it('scores every reference solution of the GSM8K test set right, with or without answer_pattern', async () => {
    const rows = (await readFile(GSM8K_TEST, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { answer: string });
    for (const flags of [['--env.answer_pattern', '####\\s*(.+)$'], []]) {
      const argv = ['--env.data_path', GSM8K_TEST, '--env.prompt_field', 'question', ...flags];
      const source = await dataset.load(configFor(argv));
      const scores = await Promise.all(rows.map(async (row, i) => (await play(source.get(i), row.answer, argv)).score));
      expect(scores.filter((s) => s !== 1)).toEqual([]);
      expect((await play(source.get(0), '\\boxed{17}', argv)).score).toBe(0);
    }
  });
});
