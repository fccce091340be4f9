import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, playEpisode, resolveEnvConfig } from 'clotho';
import fundamental, { SYSTEM_PROMPT, type FundamentalRecord } from './index.js';
import { DEFAULT_DATA_URL } from './data.js';
import { FIXTURE_RECORDS, writeFixture } from './fixture.js';

const configFor = (argv: string[]) => resolveEnvConfig(fundamental, argv);
const loadAll = async (argv: string[]) => {
  const source = await fundamental.load(configFor(argv));
  return Array.from({ length: source.size }, (_, i) => source.get(i));
};
const answer = (r: FundamentalRecord, direction = r.answer, magnitude = String(r.magnitude)) =>
  `<think>Weighing the figures and the news.</think>\nThe ${r.fundamental_metric} will be: ${direction} and the magnitude will be: ${magnitude}%`;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-fundamentals-'));
});

describe('fundamental_prediction config', () => {
  it("defaults to Atropos's group size, token budget and temperature, the train split and binary rewards", () => {
    expect(configFor([])).toMatchObject({
      group_size: 16,
      max_token_length: 16384,
      temperature: 0.8,
      data_path: null,
      data_url: DEFAULT_DATA_URL,
      split: 'train',
      test_fraction: 0.05,
      seed: 42,
      binary_reward: true,
    });
  });

  it('takes its own flags and rejects bad values', () => {
    expect(configFor(['--env.split', 'test', '--env.seed', 'None', '--env.binary_reward', 'false'])).toMatchObject({
      split: 'test',
      seed: null,
      binary_reward: false,
    });
    expect(() => configFor(['--env.split', 'dev'])).toThrow(ConfigError);
    expect(() => configFor(['--env.test_fraction', '1.5'])).toThrow(ConfigError);
  });
});

describe('fundamental_prediction data', () => {
  it("reads the same records from JSON lines and Parquet in the data set's layout", async () => {
    const jsonl = await writeFixture(dir, 'jsonl');
    const parquet = await writeFixture(dir, 'parquet');
    const flags = ['--env.split', 'all', '--env.seed', 'None'];
    expect(await loadAll(['--env.data_path', jsonl, ...flags])).toEqual(FIXTURE_RECORDS);
    expect(await loadAll(['--env.data_path', parquet, ...flags])).toEqual(FIXTURE_RECORDS);
  });

  it('shuffles with the seed, and holds out ceil(5%) as the test split', async () => {
    const path = await writeFixture(dir, 'jsonl');
    const train = await loadAll(['--env.data_path', path]);
    const test = await loadAll(['--env.data_path', path, '--env.split', 'test']);
    expect(test).toHaveLength(1);
    expect(train).toHaveLength(5);
    const byContext = (records: FundamentalRecord[]) => records.map((r) => r.context).sort();
    expect(byContext([...train, ...test])).toEqual(byContext(FIXTURE_RECORDS));
    expect(await loadAll(['--env.data_path', path])).toEqual(train); // the same every time
    expect(await loadAll(['--env.data_path', path, '--env.seed', '7', '--env.split', 'all'])).not.toEqual(FIXTURE_RECORDS);
    await expect(
      fundamental.load(configFor(['--env.data_path', path, '--env.split', 'train', '--env.test_fraction', '1'])),
    ).rejects.toThrow(`no records in the train split of ${path} (6 records, test_fraction 1)`);
  });

  it('names the record and column of a record outside the layout', async () => {
    const path = join(dir, 'bad.jsonl');
    const { magnitude: _, ...noMagnitude } = FIXTURE_RECORDS[0]!;
    await writeFile(
      path,
      `${JSON.stringify(FIXTURE_RECORDS[1])}\n${JSON.stringify(noMagnitude)}\n${JSON.stringify({ ...FIXTURE_RECORDS[2], answer: 7 })}\n`,
    );
    const error = fundamental.load(configFor(['--env.data_path', path]));
    await expect(error).rejects.toThrow(/record 2: magnitude: .*\n {2}record 3: answer: /);
  });

  it('says so when the file is missing', async () => {
    await expect(fundamental.load(configFor(['--env.data_path', join(dir, 'none.parquet')]))).rejects.toThrow('dataset file not found');
  });
});

describe('fundamental_prediction download', () => {
  const saved = process.env.CLOTHO_HOME;
  let server: Server;
  let base: string;
  let served = 0;
  beforeAll(async () => {
    const parquet = await readFile(await writeFixture(dir, 'parquet'));
    server = createServer((req, res) => {
      if (req.url !== '/train/0000.parquet') return void res.writeHead(404).end('not found');
      served++;
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(parquet);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  afterEach(() => {
    if (saved === undefined) delete process.env.CLOTHO_HOME;
    else process.env.CLOTHO_HOME = saved;
  });

  it('without data_path, downloads the Parquet file once into the cache', async () => {
    process.env.CLOTHO_HOME = await mkdtemp(join(tmpdir(), 'clotho-fundamentals-home-'));
    const flags = ['--env.data_url', `${base}/train/0000.parquet`, '--env.split', 'all', '--env.seed', 'None'];
    expect(await loadAll(flags)).toEqual(FIXTURE_RECORDS);
    expect(await loadAll(flags)).toEqual(FIXTURE_RECORDS);
    expect(served).toBe(1);
  });

  it('without data_path and without the file to download, says to pass --env.data_path', async () => {
    process.env.CLOTHO_HOME = await mkdtemp(join(tmpdir(), 'clotho-fundamentals-home-'));
    await expect(fundamental.load(configFor(['--env.data_url', `${base}/missing.parquet`]))).rejects.toThrow(
      `could not download ${base}/missing.parquet (HTTP 404 Not Found); pass --env.data_path <file> to use a local copy`,
    );
  });
});

describe('fundamental_prediction prompt and reward', () => {
  const record = FIXTURE_RECORDS[1]!; // earnings per share, reduced by 12.3
  const play = async (completion: string) => {
    const { score, metrics, parsed } = await playEpisode(fundamental, { item: record, replies: [completion] });
    return { score, metrics, parsed };
  };

  it("asks for one thinking block, then the answer sentence for the item's metric, then gives the data", () => {
    const [system, user, ...rest] = fundamental.prompt(record, configFor([]));
    expect(rest).toEqual([]);
    expect(system).toEqual({ role: 'system', content: SYSTEM_PROMPT });
    expect(SYSTEM_PROMPT).toContain('<think> </think>');
    const text = String(user!.content);
    expect(user!.role).toBe('user');
    expect(text).toContain('"The earnings per share will be: {answer} and the magnitude will be: {percentage}%"');
    expect(text).toContain('"maintained", "raised" or "reduced"');
    expect(text.endsWith(`\n${record.context}`)).toBe(true);
  });

  it("scores the right direction 1 + the magnitude bonus, with Atropos's metrics", async () => {
    expect(await play(answer(record))).toEqual({
      score: 2,
      parsed: { direction: 'reduced', magnitude: '12.3' },
      metrics: { direction_accuracy: 1, magnitude_accuracy: 1, combined_score: 2, formatted: 1 },
    });
    const close = await play(answer(record, 'reduced', '15'));
    expect(close).toMatchObject({ score: 1.7, metrics: { direction_accuracy: 1, magnitude_accuracy: 0.7, combined_score: 1.7 } });
  });

  it('scores a wrong direction or a broken format 0, without a magnitude metric', async () => {
    expect(await play(answer(record, 'raised', '12.3'))).toMatchObject({
      score: 0,
      metrics: { direction_accuracy: 0, combined_score: 0, formatted: 1 },
    });
    expect((await play(answer(record, 'raised'))).metrics).not.toHaveProperty('magnitude_accuracy');
    expect(await play(answer(record).replace('<think>', ''))).toEqual({
      score: 0,
      parsed: null,
      metrics: { direction_accuracy: 0, combined_score: 0, formatted: 0 },
    });
  });

  it("scores every fixture record's own answer 2", async () => {
    for (const r of FIXTURE_RECORDS) expect((await playEpisode(fundamental, { item: r, replies: [answer(r)] })).score).toBe(2);
  });

  it('rescores a group with the length penalty, then binarises unless binary_reward is false', () => {
    const context = (argv: string[]) => ({
      scores: [2, 1, 0, 1.3, 1],
      completionTokens: [120, 16384, 80, 40960, 40960],
      completions: ['', '', '', '', ''],
      finishReasons: ['stop', 'length', 'stop', 'length', 'length'],
      config: configFor(argv),
    });
    expect(fundamental.rescoreGroup!(context([]))).toEqual([1, 1, -1, 1, -1]);
    expect(fundamental.rescoreGroup!(context(['--env.binary_reward', 'false']))).toEqual([2, 0.5, 0, 1.3 - 1.25, -0.25]);
  });
});
