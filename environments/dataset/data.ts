/** Rows of any table (JSONL, CSV, Parquet) turned into prompts and gold answers by the environment's config. */
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import { loadTable, problemsError, resolveDataset, seededRandom, tableFormatOf, type TableFormat } from 'clotho';

/** One item: the user message's text and the gold answer as the data set gives it (null without one). */
export interface DatasetItem {
  prompt: string;
  answer: unknown;
}

export interface DataOptions {
  dataPath: string;
  format: TableFormat | null;
  csvColumns: string[] | null;
  promptField: string;
  /** `{field}` placeholders for any column; `{{` and `}}` are literal braces. Null: the prompt field as it is. */
  template: string | null;
  answerField: string | null;
  /** A regular expression whose first group is the gold answer inside the answer field. */
  answerPattern: string | null;
  /** Whether a row without a gold answer is an error (some reward reads it). */
  answerRequired: boolean;
  /** Fixed shuffle of the rows; null keeps the file's order. */
  shuffleSeed: number | null;
}

const PLACEHOLDER = /\{\{|\}\}|\{([A-Za-z_][\w .-]*)\}/g;

/** The columns a template's placeholders name. */
export function templateFields(template: string): string[] {
  return [...new Set([...template.matchAll(PLACEHOLDER)].flatMap((m) => (m[1] === undefined ? [] : [m[1].trim()])))];
}

/** A cell as prompt text: strings as they are, lists and objects (choices, say) as JSON, null as nothing. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  return String(value);
}

/** Fills a template's `{field}` placeholders from a row. */
export function renderTemplate(template: string, row: Record<string, unknown>): string {
  return template.replace(PLACEHOLDER, (match, field: string | undefined) =>
    field === undefined ? match[0]! : cellText(row[field.trim()]),
  );
}

/**
 * Reads the table and makes one item per row, checking every row first.
 * @throws Error naming the rows (1-based) that lack a field, or whose answer the pattern does not match.
 */
export async function loadItems(options: DataOptions): Promise<DatasetItem[]> {
  const remote = /^https?:\/\//.test(options.dataPath);
  // A URL is downloaded once into the cache; a local file is read where it is.
  const path = remote
    ? await resolveDataset({ url: options.dataPath, cacheName: cacheName(options.dataPath) })
    : await resolveDataset({ path: options.dataPath, cacheName: '', url: '' });
  const format = options.format ?? tableFormatOf(remote ? new URL(options.dataPath).pathname : options.dataPath);
  const rows = await loadTable(path, { format, ...(options.csvColumns ? { columns: options.csvColumns } : {}) });
  if (rows.length === 0) throw new Error(`no rows in ${options.dataPath}`);
  const pattern = options.answerPattern === null ? null : new RegExp(options.answerPattern, 'm');
  const needed = options.template === null ? [options.promptField] : templateFields(options.template);
  const problems: string[] = [];
  const items = rows.map((row, i) => {
    const missing = needed.filter((field) => !Object.hasOwn(row, field));
    if (missing.length > 0)
      problems.push(`row ${i + 1}: no field ${missing.map((f) => `"${f}"`).join(', ')} (columns: ${Object.keys(row).join(', ')})`);
    let answer: unknown = options.answerField === null ? null : (row[options.answerField] ?? null);
    if (answer === '') answer = null; // an empty CSV cell
    if (answer === null && options.answerRequired) problems.push(`row ${i + 1}: no gold answer in "${options.answerField}"`);
    if (answer !== null && pattern) {
      const match = pattern.exec(cellText(answer));
      if (!match?.[1]) problems.push(`row ${i + 1}: ${options.answerField} does not match /${options.answerPattern}/`);
      answer = match?.[1]?.trim() ?? null;
    }
    const prompt = options.template === null ? cellText(row[options.promptField]) : renderTemplate(options.template, row);
    return { prompt, answer };
  });
  if (problems.length > 0) throw problemsError(`invalid data in ${options.dataPath}`, problems);
  // The same permutation for the same seed on every worker.
  return options.shuffleSeed === null ? items : seededRandom(options.shuffleSeed).shuffle(items);
}

/** A cache file name for a URL: its own name, kept apart from same-named files of other URLs. */
function cacheName(url: string): string {
  const hash = createHash('sha256').update(url).digest('hex').slice(0, 12);
  return `dataset-${hash}-${basename(new URL(url).pathname) || 'data'}`;
}
