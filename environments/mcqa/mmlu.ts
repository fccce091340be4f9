import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { loadTable, problemsError, tableFormatOf, z, type TableFormat } from 'clotho';

/** One multiple-choice question: its subject, the choices in order, and the index of the right one. */
export interface McqaItem {
  subject: string;
  question: string;
  choices: string[];
  answer: number;
}

/** MMLU's splits, as the original release names its files (`<subject>_test.csv`, `_dev.csv`, `_val.csv`). */
export const MMLU_SPLITS = ['test', 'dev', 'val'] as const;
/** One of {@link MMLU_SPLITS}. */
export type MmluSplit = (typeof MMLU_SPLITS)[number];

/** The Hugging Face hub's copy (`cais/mmlu`, config `all`, MIT), one Parquet file per split. */
export const MMLU_URLS: Record<MmluSplit, string> = {
  test: 'https://huggingface.co/datasets/cais/mmlu/resolve/main/all/test-00000-of-00001.parquet',
  dev: 'https://huggingface.co/datasets/cais/mmlu/resolve/main/all/dev-00000-of-00001.parquet',
  val: 'https://huggingface.co/datasets/cais/mmlu/resolve/main/all/validation-00000-of-00001.parquet',
};

/** Where the questions are and which of them to keep. */
export interface LoadMmluOptions {
  /** A CSV, JSONL or Parquet file, or a directory of the original release's CSVs. */
  path: string;
  /** @default 'auto': from the file's extension */
  format?: TableFormat | 'auto';
  /** Which `<subject>_<split>.csv` files of a directory to read. @default 'test' */
  split?: MmluSplit;
  /** Only these subjects; null for all. @default null */
  subjects?: string[] | null;
}

// The original release's CSVs have no header row: the question, four choices, and the right letter.
const CSV_COLUMNS = ['question', 'A', 'B', 'C', 'D', 'answer'];
const CsvRow = z.object({
  question: z.string(),
  A: z.string(),
  B: z.string(),
  C: z.string(),
  D: z.string(),
  answer: z
    .string()
    .trim()
    .pipe(z.enum(['A', 'B', 'C', 'D'])),
});

// The hub's layout (JSONL or Parquet): `answer` indexes `choices`; Parquet stores it as a 64-bit integer.
const HubRow = z
  .looseObject({
    question: z.string(),
    subject: z.string(),
    choices: z.array(z.string()).min(2).max(26),
    answer: z.union([z.number().int(), z.bigint().transform(Number)]),
  })
  .refine((row) => row.answer >= 0 && row.answer < row.choices.length, { path: ['answer'], message: 'expected an index into choices' });

/** Validates every row, naming the file and row of each problem (the first ten). */
function validate<S extends z.ZodType>(rows: Record<string, unknown>[], schema: S, file: string): z.infer<S>[] {
  const problems: string[] = [];
  const valid = rows.flatMap((row, i) => {
    const result = schema.safeParse(row);
    if (result.success) return [result.data as z.infer<S>];
    for (const issue of result.error.issues) problems.push(`${file}: row ${i + 1}: ${issue.path.join('.') || '(row)'}: ${issue.message}`);
    return [];
  });
  if (problems.length > 0) throw problemsError(`invalid MMLU data in ${file}`, problems);
  return valid;
}

/** `abstract_algebra_test.csv` is subject `abstract_algebra`. */
export const subjectOfCsv = (file: string): string =>
  basename(file)
    .replace(/\.[^.]*$/, '')
    .replace(/_(?:test|dev|val)$/, '');

async function loadCsv(file: string): Promise<McqaItem[]> {
  const rows = validate(await loadTable(file, { format: 'csv', columns: CSV_COLUMNS }), CsvRow, file);
  const subject = subjectOfCsv(file);
  return rows.map((r) => ({ subject, question: r.question, choices: [r.A, r.B, r.C, r.D], answer: 'ABCD'.indexOf(r.answer) }));
}

async function loadHub(file: string, format: TableFormat): Promise<McqaItem[]> {
  const rows = validate(await loadTable(file, { format }), HubRow, file);
  return rows.map((r) => ({ subject: r.subject, question: r.question, choices: r.choices, answer: r.answer }));
}

const isDirectory = (path: string) =>
  stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );

/** The split's CSVs in `dir`, or in `dir/<split>` (the release's `data/` folder), by subject. */
async function csvFiles(dir: string, split: MmluSplit): Promise<string[]> {
  for (const folder of [dir, join(dir, split)]) {
    if (!(await isDirectory(folder))) continue;
    const names = (await readdir(folder)).filter((name) => name.endsWith(`_${split}.csv`)).sort();
    if (names.length > 0) return names.map((name) => join(folder, name));
  }
  throw new Error(`no MMLU files named <subject>_${split}.csv in ${dir} or ${join(dir, split)}`);
}

/** Round-robin over subjects (in order of first appearance), so the first n items cover every subject. */
function interleave(items: McqaItem[]): McqaItem[] {
  const bySubject = new Map<string, McqaItem[]>();
  for (const item of items) {
    const list = bySubject.get(item.subject);
    if (list) list.push(item);
    else bySubject.set(item.subject, [item]);
  }
  const lists = [...bySubject.values()];
  const longest = Math.max(0, ...lists.map((l) => l.length));
  return Array.from({ length: longest }, (_, i) => lists.flatMap((l) => (i < l.length ? [l[i]!] : []))).flat();
}

/**
 * Reads MMLU-style questions from the original release's CSVs (a file, or a directory of `<subject>_<split>.csv`) or
 * from the Hugging Face hub's layout (`cais/mmlu` as JSONL or Parquet: `question`, `subject`, `choices`, `answer`).
 * Every row is checked; problems name the file and row. Items are interleaved by subject.
 * @throws Error when the path is missing, a row is malformed, or a chosen subject has no items (naming those there are).
 */
export async function loadMmlu(options: LoadMmluOptions): Promise<McqaItem[]> {
  const { path, split = 'test', subjects = null } = options;
  const info = await stat(path).catch(() => null);
  if (!info) throw new Error(`MMLU data not found: ${path}`);
  let items: McqaItem[];
  if (info.isDirectory()) items = (await Promise.all((await csvFiles(path, split)).map(loadCsv))).flat();
  else {
    const format = !options.format || options.format === 'auto' ? tableFormatOf(path) : options.format;
    items = format === 'csv' ? await loadCsv(path) : await loadHub(path, format);
  }
  if (subjects) {
    const present = new Set(items.map((item) => item.subject));
    const missing = subjects.filter((s) => !present.has(s));
    if (missing.length > 0)
      throw new Error(`no items of subject ${missing.join(', ')} in ${path}; its subjects: ${[...present].sort().join(', ')}`);
    items = items.filter((item) => subjects.includes(item.subject));
  }
  if (items.length === 0) throw new Error(`no MMLU questions in ${path}`);
  return interleave(items);
}
