import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { loadTable, tableFormatOf } from './tables.js';

describe('loadTable', () => {
  it('reads the same rows from JSON lines, CSV with and without a header, and Parquet', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-tables-'));
    const rows = [
      { question: 'Say "hi", twice', answer: 'B' },
      { question: 'Line\nbreak', answer: 'D' },
    ];
    await writeFile(join(dir, 't.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n\n');
    await writeFile(join(dir, 't.csv'), 'question,answer\n"Say ""hi"", twice",B\n"Line\nbreak",D\n');
    await writeFile(join(dir, 'headless.csv'), '"Say ""hi"", twice",B\n"Line\nbreak",D\n');
    const parquet = parquetWriteBuffer({
      columnData: [
        { name: 'question', data: rows.map((r) => r.question) },
        { name: 'answer', data: rows.map((r) => r.answer) },
      ],
    });
    await writeFile(join(dir, 't.parquet'), Buffer.from(parquet));
    expect(await loadTable(join(dir, 't.jsonl'))).toEqual(rows);
    expect(await loadTable(join(dir, 't.csv'))).toEqual(rows);
    expect(await loadTable(join(dir, 'headless.csv'), { columns: ['question', 'answer'] })).toEqual(rows);
    expect(await loadTable(join(dir, 't.parquet'))).toEqual(rows);
  });

  it('keeps Parquet byte columns (images as the Hugging Face hub stores them) as bytes when asked', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-tables-'));
    const bytes = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0xff, 0x00, 0xfe]);
    const parquet = parquetWriteBuffer({
      columnData: [
        { name: 'question', data: ['What?'] },
        { name: 'image', data: [{ bytes, path: 'a.png' }] },
      ],
      schema: [
        { name: 'root', num_children: 2 },
        { name: 'question', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
        { name: 'image', repetition_type: 'OPTIONAL', num_children: 2 },
        { name: 'bytes', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
        { name: 'path', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
      ],
    });
    await writeFile(join(dir, 'images.parquet'), Buffer.from(parquet));
    const [row] = await loadTable(join(dir, 'images.parquet'), { binary: true });
    expect(row).toEqual({ question: 'What?', image: { bytes, path: 'a.png' } });
    expect((row!.image as { bytes: unknown }).bytes).toBeInstanceOf(Uint8Array);
    // Decoded as text by default, which loses bytes that are not UTF-8.
    const [text] = await loadTable(join(dir, 'images.parquet'));
    expect(typeof (text!.image as { bytes: unknown }).bytes).toBe('string');
  });

  it('names the file and line of bad input, and an unknown extension', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-tables-'));
    await writeFile(join(dir, 'bad.jsonl'), '{"a": 1}\n{oops\n');
    await expect(loadTable(join(dir, 'bad.jsonl'))).rejects.toThrow(/cannot read jsonl table .*bad\.jsonl: line 2: invalid JSON/);
    expect(() => tableFormatOf('data.txt')).toThrow('cannot tell the table format from ".txt"');
  });
});
