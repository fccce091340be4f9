import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { parquetReadObjects } from 'hyparquet';

/** Table formats data sets come in: JSON lines, CSV (as MMLU's original release), Parquet (as on the Hugging Face hub). */
export type TableFormat = 'jsonl' | 'csv' | 'parquet';

/** How {@link loadTable} reads a file. */
export interface LoadTableOptions {
  /** @default from the file's extension (`.jsonl`/`.json`, `.csv`, `.parquet`) */
  format?: TableFormat;
  /** Column names of a CSV without a header row (MMLU's CSVs have none); without them the first row names the columns. */
  columns?: string[];
  /**
   * Parquet: keep byte-array columns without a string annotation (image and audio bytes, as the Hugging Face hub stores
   * them) as `Uint8Array`s rather than decoding them as UTF-8 text. String columns are strings either way.
   * @default false
   */
  binary?: boolean;
}

/** The format a path's extension says. */
export function tableFormatOf(path: string): TableFormat {
  const ext = extname(path).toLowerCase();
  if (ext === '.jsonl' || ext === '.json' || ext === '.ndjson') return 'jsonl';
  if (ext === '.csv') return 'csv';
  if (ext === '.parquet') return 'parquet';
  throw new Error(`${path}: cannot tell the table format from "${ext}"; expected .jsonl, .csv or .parquet`);
}

/**
 * Reads a data set's rows as objects, whatever its format: JSON lines, CSV (RFC 4180 quoting, with or without a
 * header) or Parquet (snappy, gzip and uncompressed pages). Errors name the file and, for JSON lines, the line.
 */
export async function loadTable(path: string, options: LoadTableOptions = {}): Promise<Record<string, unknown>[]> {
  const format = options.format ?? tableFormatOf(path);
  try {
    if (format === 'parquet') {
      const bytes = await readFile(path);
      const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
      return (await parquetReadObjects({ file, utf8: !options.binary })) as Record<string, unknown>[];
    }
    const text = await readFile(path, 'utf8');
    if (format === 'csv') {
      return parseCsv(text, { columns: options.columns ?? true, skip_empty_lines: true, relax_column_count: false, bom: true }) as Record<
        string,
        unknown
      >[];
    }
    return text.split('\n').flatMap((line, i) => {
      if (line.trim() === '') return [];
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch (error) {
        throw new Error(`line ${i + 1}: invalid JSON (${(error as Error).message})`);
      }
    });
  } catch (error) {
    throw new Error(`cannot read ${format} table ${path}: ${(error as Error).message}`);
  }
}
