/** The data set's records: reading them (JSON lines or Parquet), checking their layout, and the train/test split. */
import { loadTable, problemsError, resolveDataset, seededRandom, z } from 'clotho';

/** The data set Atropos trains on (`load_dataset(..., "default", split="train")`). */
export const HF_DATASET = 'NousResearch/company-fundamentals-prediction-lite';

/** The Hub's Parquet export of its `default` config, `train` split (first shard). */
export const DEFAULT_DATA_URL = `https://huggingface.co/datasets/${HF_DATASET}/resolve/refs%2Fconvert%2Fparquet/default/train/0000.parquet`;

/**
 * One record of the data set, its columns as Atropos reads them: the context the model analyses, the metric to
 * predict, the direction it moved (`maintained`, `raised`, `reduced`) and the percentage change as text (`"0"` when
 * maintained). Other columns are kept out of the item.
 */
export interface FundamentalRecord {
  context: string;
  answer: string;
  magnitude: string | number;
  fundamental_metric: string;
}

const RecordSchema = z.object({
  context: z.string().min(1),
  answer: z.string().min(1),
  // Text in the data set; a number is accepted too (a copy re-saved with a numeric column), Parquet int64 as bigint.
  magnitude: z.union([z.string(), z.number(), z.bigint().transform(Number)]),
  fundamental_metric: z.string().min(1),
});

/** Reads and checks every record of a JSONL or Parquet file; errors name the file, the record and the column. */
export async function loadRecords(path: string): Promise<FundamentalRecord[]> {
  const rows = await loadTable(path);
  const records: FundamentalRecord[] = [];
  const problems: string[] = [];
  rows.forEach((row, i) => {
    const result = RecordSchema.safeParse(row);
    if (result.success) records.push(result.data);
    else for (const issue of result.error.issues) problems.push(`record ${i + 1}: ${issue.path.join('.') || '(record)'}: ${issue.message}`);
  });
  if (problems.length > 0) throw problemsError(`invalid data in ${path}`, problems);
  return records;
}

/** Where the records come from: a local file, else the cached or freshly downloaded Parquet export. */
export function resolveRecordsFile(dataPath: string | null, dataUrl: string): Promise<string> {
  return resolveDataset({ path: dataPath, url: dataUrl, cacheName: cacheNameOf(dataUrl) });
}

// One cache file per URL, keeping its extension so that loadTable can tell the format.
function cacheNameOf(url: string): string {
  const ext = /\.(parquet|jsonl)(?:$|\?)/.exec(url)?.[1] ?? 'parquet';
  return `fundamental-prediction-${hash(url)}.${ext}`;
}

function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

export type Split = 'train' | 'test' | 'all';

/**
 * Atropos's split, in shape: shuffle with a seed, then hold out `ceil(testFraction × n)` records as the test split
 * (the first of the permutation) and train on the rest. `seed` null keeps the file's order. The permutation is the
 * SDK's `seededRandom` shuffle (mulberry32 + Fisher–Yates), not numpy's, so the held-out records differ from Atropos's.
 */
export function splitRecords<T>(records: T[], split: Split, testFraction: number, seed: number | null): T[] {
  const ordered = seed === null ? [...records] : seededRandom(seed).shuffle(records);
  if (split === 'all') return ordered;
  const nTest = Math.ceil(testFraction * ordered.length);
  return split === 'test' ? ordered.slice(0, nTest) : ordered.slice(nTest);
}
