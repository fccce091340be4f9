import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { beforeAll, describe, expect, it } from 'vitest';
import { MBPP_ROWS, writeMbppJsonl, writeMbppParquet } from './mbpp-fixture.js';
import { loadTasks, mbppEntryPoint } from './tasks.js';

const HUMANEVAL = fileURLToPath(new URL('./data/HumanEval.jsonl', import.meta.url));
const all = { split: 'all', challengeTests: false } as const;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-code-tasks-'));
});

describe('HumanEval', () => {
  it('loads all 164 problems: the prompt is the context, the tests end by calling check on the entry point', async () => {
    const tasks = await loadTasks(HUMANEVAL, 'humaneval', all);
    expect(tasks).toHaveLength(164);
    const row = JSON.parse((await readFile(HUMANEVAL, 'utf8')).split('\n')[0]!) as Record<string, string>;
    expect(tasks[0]).toEqual({
      taskId: 'HumanEval/0',
      question: row.prompt,
      entryPoint: 'has_close_elements',
      context: row.prompt,
      tests: `${row.test}\n\ncheck(has_close_elements)\n`,
    });
    expect(new Set(tasks.map((t) => t.taskId)).size).toBe(164);
  });

  it("reads the same problems from the hub's Parquet layout", async () => {
    const rows = (await readFile(HUMANEVAL, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, string>);
    const columns = ['task_id', 'prompt', 'canonical_solution', 'test', 'entry_point'];
    const path = join(dir, 'humaneval.parquet');
    await writeFile(
      path,
      Buffer.from(parquetWriteBuffer({ columnData: columns.map((name) => ({ name, data: rows.map((r) => r[name]) })) })),
    );
    expect(await loadTasks(path, 'humaneval', all)).toEqual(await loadTasks(HUMANEVAL, 'humaneval', all));
  });

  it('names the rows and fields of a file in another layout', async () => {
    const mbpp = await writeMbppJsonl(dir);
    await expect(loadTasks(mbpp, 'humaneval', all)).rejects.toThrow(
      /is not in humaneval's format:\n {2}row 1: task_id: .*\n {2}row 1: prompt: /,
    );
  });
});

describe('MBPP', () => {
  it('asks the task with its tests, as the MBPP paper does, and runs setup code before the asserts', async () => {
    const tasks = await loadTasks(await writeMbppJsonl(dir), 'mbpp', all);
    expect(tasks.map((t) => [t.taskId, t.entryPoint])).toEqual([
      ['MBPP/2', 'add_nums'],
      ['MBPP/11', 'circle_area'],
      ['MBPP/601', 'reverse_words'],
    ]);
    expect(tasks[1]).toEqual({
      taskId: 'MBPP/11',
      question: `Write a function to find the area of a circle. Your code should pass these tests:\n\n${MBPP_ROWS[1]!.test_list.join('\n')}`,
      entryPoint: 'circle_area',
      context: '',
      tests: `import math\n${MBPP_ROWS[1]!.test_list.join('\n')}\n`,
    });
  });

  it('adds the challenge tests when asked', async () => {
    const [, circle] = await loadTasks(await writeMbppJsonl(dir), 'mbpp', { split: 'all', challengeTests: true });
    expect(circle!.tests).toBe(`import math\n${[...MBPP_ROWS[1]!.test_list, 'assert circle_area(0) == 0'].join('\n')}\n`);
  });

  it('keeps the rows of the chosen split by task id', async () => {
    const path = await writeMbppJsonl(dir);
    const ids = async (split: 'prompt' | 'test' | 'validation' | 'train') =>
      (await loadTasks(path, 'mbpp', { split, challengeTests: false })).map((t) => t.taskId);
    expect(await ids('prompt')).toEqual(['MBPP/2']);
    expect(await ids('test')).toEqual(['MBPP/11']);
    expect(await ids('validation')).toEqual([]);
    expect(await ids('train')).toEqual(['MBPP/601']);
  });

  it("reads the hub's Parquet layout, lists of tests included, as the JSON lines", async () => {
    const fromParquet = await loadTasks(await writeMbppParquet(dir), 'mbpp', { split: 'all', challengeTests: true });
    expect(fromParquet).toEqual(await loadTasks(await writeMbppJsonl(dir), 'mbpp', { split: 'all', challengeTests: true }));
  });

  it('finds the function under test inside the wrappers of an assert', () => {
    expect(mbppEntryPoint('def similar(a, b):\r\n  pass', ['assert set(similar((3, 4), (4, 5))) == {4}'])).toBe('similar');
    expect(mbppEntryPoint('import math\ndef area(r): pass', ['assert math.isclose(area(2), 12.56, rel_tol=0.001)'])).toBe('area');
    expect(mbppEntryPoint('', ['assert sorted(solve([2, 1])) == [1, 2]'])).toBe('solve');
  });
});
