import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { mmluCsv, mmluJsonl, mmluParquet } from './fixtures.js';
import { loadMmlu, subjectOfCsv, type McqaItem } from './mmlu.js';

/** Questions of two subjects, as every layout below writes them. */
const ITEMS: McqaItem[] = [
  { subject: 'astronomy', question: 'Which planet is largest?', choices: ['Mars', 'Jupiter', 'Venus', 'Mercury'], answer: 1 },
  { subject: 'astronomy', question: 'What is "the red planet", in one word?', choices: ['Mars', 'Earth', 'Saturn', 'Neptune'], answer: 0 },
  { subject: 'astronomy', question: 'How many moons has Mars?\n(Count them.)', choices: ['0', '1', '2', '3'], answer: 2 },
  {
    subject: 'virology',
    question: 'A virus, in short, is:',
    choices: ['a cell', 'a bacterium', 'a fungus', 'an obligate parasite, with, commas'],
    answer: 3,
  },
];
/** Round-robin by subject, in order of first appearance. */
const INTERLEAVED = [ITEMS[0], ITEMS[3], ITEMS[1], ITEMS[2]];

const csvRow = (item: McqaItem) => mmluCsv([item]).trimEnd();

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-mmlu-'));
  // The original release: data/{test,dev,val}/<subject>_<split>.csv.
  for (const split of ['test', 'dev']) {
    await mkdir(join(dir, 'data', split), { recursive: true });
    const items = split === 'test' ? ITEMS : ITEMS.slice(0, 1);
    await writeFile(join(dir, 'data', split, `astronomy_${split}.csv`), mmluCsv(items.filter((i) => i.subject === 'astronomy')));
    if (split === 'test')
      await writeFile(join(dir, 'data', split, 'virology_test.csv'), mmluCsv(items.filter((i) => i.subject === 'virology')));
  }
  await writeFile(join(dir, 'test.jsonl'), mmluJsonl(ITEMS));
  await writeFile(join(dir, 'test.parquet'), mmluParquet(ITEMS));
});

describe('loadMmlu', () => {
  it('reads a directory of the original CSVs, naming subjects after the files', async () => {
    expect(await loadMmlu({ path: join(dir, 'data', 'test') })).toEqual(INTERLEAVED);
  });

  it("reads the split asked for, also from the release's data/ folder", async () => {
    expect(await loadMmlu({ path: join(dir, 'data'), split: 'test' })).toEqual(INTERLEAVED);
    expect(await loadMmlu({ path: join(dir, 'data'), split: 'dev' })).toEqual([ITEMS[0]]);
    await expect(loadMmlu({ path: join(dir, 'data'), split: 'val' })).rejects.toThrow('no MMLU files named <subject>_val.csv');
  });

  it('reads one CSV file, by extension or by the format given', async () => {
    const file = join(dir, 'data', 'test', 'virology_test.csv');
    expect(await loadMmlu({ path: file })).toEqual([ITEMS[3]]);
    const renamed = join(dir, 'virology_test.txt');
    await writeFile(renamed, mmluCsv([ITEMS[3]!]));
    expect(await loadMmlu({ path: renamed, format: 'csv' })).toEqual([ITEMS[3]]);
  });

  it("reads the hub's layout as JSON lines and as Parquet", async () => {
    expect(await loadMmlu({ path: join(dir, 'test.jsonl') })).toEqual(INTERLEAVED);
    expect(await loadMmlu({ path: join(dir, 'test.parquet') })).toEqual(INTERLEAVED);
    expect(await loadMmlu({ path: join(dir, 'test.parquet'), format: 'parquet' })).toEqual(INTERLEAVED);
  });

  it("takes more than four choices from the hub's layout", async () => {
    const five = { subject: 'x', question: 'q', choices: ['a', 'b', 'c', 'd', 'e'], answer: 4 };
    await writeFile(join(dir, 'five.jsonl'), JSON.stringify(five) + '\n');
    expect(await loadMmlu({ path: join(dir, 'five.jsonl') })).toEqual([five]);
  });

  it('keeps only the subjects asked for, and names those there are when one is missing', async () => {
    for (const path of [join(dir, 'data'), join(dir, 'test.parquet')]) {
      expect(await loadMmlu({ path, subjects: ['virology'] })).toEqual([ITEMS[3]]);
      await expect(loadMmlu({ path, subjects: ['virology', 'anatomy'] })).rejects.toThrow(
        'no items of subject anatomy in ' + path + '; its subjects: astronomy, virology',
      );
    }
  });

  it('names the file and row of malformed data', async () => {
    const badCsv = join(dir, 'bad_test.csv');
    await writeFile(badCsv, `${csvRow(ITEMS[0]!)}\n"q","a","b","c","d","E"\n`);
    await expect(loadMmlu({ path: badCsv })).rejects.toThrow(`${badCsv}: row 2: answer:`);
    const shortCsv = join(dir, 'short_test.csv');
    await writeFile(shortCsv, '"q","a","b","B"\n');
    await expect(loadMmlu({ path: shortCsv })).rejects.toThrow(`cannot read csv table ${shortCsv}`);
    const badJsonl = join(dir, 'bad.jsonl');
    await writeFile(
      badJsonl,
      [ITEMS[0], { ...ITEMS[1], answer: 4 }, { ...ITEMS[2], choices: 'A' }].map((r) => JSON.stringify(r)).join('\n'),
    );
    await expect(loadMmlu({ path: badJsonl })).rejects.toThrow(`${badJsonl}: row 2: answer: expected an index into choices`);
    await expect(loadMmlu({ path: badJsonl })).rejects.toThrow(`${badJsonl}: row 3: choices:`);
  });

  it('says what is missing: the path, or any question', async () => {
    await expect(loadMmlu({ path: join(dir, 'nowhere.csv') })).rejects.toThrow(`MMLU data not found: ${join(dir, 'nowhere.csv')}`);
    await writeFile(join(dir, 'empty.jsonl'), '');
    await expect(loadMmlu({ path: join(dir, 'empty.jsonl') })).rejects.toThrow('no MMLU questions in');
  });
});

describe('subjectOfCsv', () => {
  it("drops the split suffix of the release's file names", () => {
    expect(subjectOfCsv('/d/high_school_us_history_test.csv')).toBe('high_school_us_history');
    expect(subjectOfCsv('college_physics_val.csv')).toBe('college_physics');
    expect(subjectOfCsv('mine.csv')).toBe('mine');
  });
});
