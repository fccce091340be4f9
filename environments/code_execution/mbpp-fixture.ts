// Test support: small MBPP files in the data set's own layouts (google-research's JSON lines, the Hugging Face hub's
// Parquet), with problems written for the tests, and a right and a wrong solution of each.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';

export interface MbppRow {
  task_id: number;
  text: string;
  code: string;
  test_list: string[];
  test_setup_code: string;
  challenge_test_list: string[];
}

/** Problems with ids in three of MBPP's splits (prompt 1-10, test 11-510, train 601-974); lines end in \r\n as MBPP's do. */
export const MBPP_ROWS: MbppRow[] = [
  {
    task_id: 2,
    text: 'Write a function to add two numbers.',
    code: 'def add_nums(a, b):\r\n  return a + b',
    test_list: ['assert add_nums(1, 2) == 3', 'assert add_nums(-1, 1) == 0', 'assert add_nums(10, 5) == 15'],
    test_setup_code: '',
    challenge_test_list: [],
  },
  {
    task_id: 11,
    text: 'Write a function to find the area of a circle.',
    code: 'import math\r\ndef circle_area(r):\r\n  return math.pi * r * r',
    test_list: [
      'assert math.isclose(circle_area(1), 3.14159, rel_tol=1e-4)',
      'assert math.isclose(circle_area(2), 12.56637, rel_tol=1e-4)',
    ],
    // The asserts use math; only the setup imports it for them.
    test_setup_code: 'import math',
    challenge_test_list: ['assert circle_area(0) == 0'],
  },
  {
    task_id: 601,
    text: 'Write a python function to reverse the order of the words in a string.',
    code: "def reverse_words(s):\r\n    return ' '.join(reversed(s.split()))",
    test_list: [
      'assert reverse_words("a b c") == "c b a"',
      'assert reverse_words("hello world") == "world hello"',
      'assert reverse_words("x") == "x"',
    ],
    test_setup_code: '',
    challenge_test_list: ['assert reverse_words("  a  b ") == "b a"'],
  },
];

/** Wrong solutions: the third passes the basic tests but not its challenge test (runs of spaces). */
export const MBPP_WRONG: Record<number, string> = {
  2: 'def add_nums(a, b):\n    return a - b\n',
  11: 'def circle_area(r):\n    return 3.14 * r * 2\n',
  601: "def reverse_words(s):\n    return ' '.join(s.split(' ')[::-1])\n",
};

export async function writeMbppJsonl(dir: string, rows = MBPP_ROWS): Promise<string> {
  const path = join(dir, 'mbpp.jsonl');
  await writeFile(path, rows.map((row) => JSON.stringify(row)).join('\n') + '\n');
  return path;
}

/** The hub's layout: `task_id` int32, strings, and `test_list`/`challenge_test_list` as Parquet lists of strings. */
export async function writeMbppParquet(dir: string, rows = MBPP_ROWS): Promise<string> {
  const text = (name: string) => ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' });
  const list = (name: string) => [
    { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { name: 'element', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
  ];
  const column = <K extends keyof MbppRow>(name: K) => ({ name, data: rows.map((row) => row[name]) });
  const buffer = parquetWriteBuffer({
    columnData: [
      column('task_id'),
      column('text'),
      column('code'),
      column('test_list'),
      column('test_setup_code'),
      column('challenge_test_list'),
    ],
    schema: [
      { name: 'root', num_children: 6 },
      { name: 'task_id', type: 'INT32', repetition_type: 'OPTIONAL' },
      text('text'),
      text('code'),
      ...list('test_list'),
      text('test_setup_code'),
      ...list('challenge_test_list'),
    ] as Parameters<typeof parquetWriteBuffer>[0]['schema'],
  });
  const path = join(dir, 'mbpp.parquet');
  await writeFile(path, Buffer.from(buffer));
  return path;
}
