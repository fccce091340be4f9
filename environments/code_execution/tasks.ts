import { loadTable, z } from 'clotho';

/** One programming problem, whichever data set it came from. */
export interface CodeTask {
  /** `HumanEval/0`, `MBPP/11`. */
  taskId: string;
  /** What the user message asks. */
  question: string;
  /** The function the tests call. */
  entryPoint: string;
  /**
   * Code placed before the model's (HumanEval's prompt: imports, helpers and the signature the model may continue);
   * empty for MBPP, whose solutions stand alone.
   */
  context: string;
  /** Python run after the model's code; it raises (a failed assert) when the code is wrong. */
  tests: string;
}

export const DATASETS = ['humaneval', 'mbpp'] as const;
export type Dataset = (typeof DATASETS)[number];

/** MBPP's splits by task id, as its paper defines them; `all` keeps every row of the file. */
export const MBPP_SPLITS = { all: [1, Infinity], prompt: [1, 10], test: [11, 510], validation: [511, 600], train: [601, 974] } as const;
export type MbppSplit = keyof typeof MBPP_SPLITS;

/** Public copies: HumanEval from the Hugging Face hub (Parquet), MBPP from google-research (JSON lines). */
export const DATASET_URLS: Record<Dataset, { url: string; cacheName: string }> = {
  humaneval: {
    url: 'https://huggingface.co/datasets/openai/openai_humaneval/resolve/main/openai_humaneval/test-00000-of-00001.parquet',
    cacheName: 'humaneval-test.parquet',
  },
  mbpp: { url: 'https://raw.githubusercontent.com/google-research/google-research/master/mbpp/mbpp.jsonl', cacheName: 'mbpp.jsonl' },
};

const HumanEvalRow = z.object({
  task_id: z.string().min(1),
  prompt: z.string().min(1),
  entry_point: z.string().regex(/^[A-Za-z_]\w*$/, 'not a Python identifier'),
  test: z.string().includes('def check(', { message: 'no check(candidate) function' }),
});

// Parquet lists may come as arrays of strings; JSON lines have them as arrays too. task_id is a number in both.
const MbppRow = z.object({
  task_id: z.coerce.number().int(),
  text: z.string().min(1),
  code: z.string(),
  test_list: z.array(z.string()).min(1),
  test_setup_code: z.string().default(''),
  challenge_test_list: z.array(z.string()).nullish(),
});

// Calls in MBPP's asserts that wrap the function under test (`assert set(f(x)) == …`, `math.isclose(f(x), …)`).
const WRAPPERS = new Set(['set', 'sorted', 'list', 'tuple', 'abs', 'round', 'isclose', 'str', 'int', 'float']);

/** The function MBPP's tests call: one the reference code defines and the first assert uses, else the first call there. */
export function mbppEntryPoint(code: string, tests: string[]): string | null {
  const defined = [...code.matchAll(/^[ \t]*def[ \t]+([A-Za-z_]\w*)/gm)].map((m) => m[1]!);
  const calls = [...(tests[0] ?? '').matchAll(/([A-Za-z_]\w*)[ \t]*\(/g)].map((m) => m[1]!);
  return calls.find((name) => defined.includes(name)) ?? calls.find((name) => !WRAPPERS.has(name)) ?? null;
}

export function humanEvalTask(row: z.infer<typeof HumanEvalRow>): CodeTask {
  return {
    taskId: row.task_id,
    question: row.prompt,
    entryPoint: row.entry_point,
    context: row.prompt,
    tests: `${row.test}\n\ncheck(${row.entry_point})\n`,
  };
}

export function mbppTask(row: z.infer<typeof MbppRow>, challenge: boolean): CodeTask {
  const asserts = [...row.test_list, ...(challenge ? (row.challenge_test_list ?? []) : [])];
  const entryPoint = mbppEntryPoint(row.code, row.test_list);
  if (!entryPoint) throw new Error(`MBPP task ${row.task_id}: no function call in its first test`);
  const shown = row.test_list.join('\n');
  return {
    taskId: `MBPP/${row.task_id}`,
    // The MBPP paper's prompt: the task, then the tests the code must pass (they name the function and its arguments).
    question: `${row.text.trim()} Your code should pass these tests:\n\n${shown}`,
    entryPoint,
    context: '',
    tests: `${row.test_setup_code.replace(/\r\n/g, '\n')}\n${asserts.join('\n')}\n`,
  };
}

/** Reads a HumanEval or MBPP file (JSON lines or Parquet); every bad row is reported with its number and field. */
export async function loadTasks(
  path: string,
  dataset: Dataset,
  options: { split: MbppSplit; challengeTests: boolean },
): Promise<CodeTask[]> {
  const rows = await loadTable(path);
  const schema = dataset === 'humaneval' ? HumanEvalRow : MbppRow;
  const problems: string[] = [];
  const parsed = rows.flatMap((row, i) => {
    const result = schema.safeParse(row);
    if (result.success) return [result.data];
    for (const issue of result.error.issues) problems.push(`row ${i + 1}: ${issue.path.join('.') || '(row)'}: ${issue.message}`);
    return [];
  });
  if (problems.length > 0) throw new Error(`${path} is not in ${dataset}'s format:\n  ${problems.slice(0, 10).join('\n  ')}`);
  if (dataset === 'humaneval') return (parsed as z.infer<typeof HumanEvalRow>[]).map(humanEvalTask);
  const [low, high] = MBPP_SPLITS[options.split];
  return (parsed as z.infer<typeof MbppRow>[])
    .filter((row) => row.task_id >= low && row.task_id <= high)
    .map((row) => mbppTask(row, options.challengeTests));
}
