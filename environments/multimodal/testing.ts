/**
 * Test fixtures in VQAv2's real layouts (see vqa.ts): a Parquet file as the Hugging Face hub serves `lmms-lab/VQAv2`,
 * and an ImageFolder `metadata.jsonl`. Used by this folder's tests and the end-to-end test; never by the environment.
 */
import { writeFile } from 'node:fs/promises';
import { parquetWriteBuffer } from 'hyparquet-writer';

/** One VQAv2 row; `image` is the `datasets` Image column (`bytes`, or a `path` when the bytes are elsewhere). */
export interface VqaRow {
  question_id: number;
  image_id: number;
  question: string;
  question_type: string;
  answer_type: string;
  /** Null as in VQAv2's test splits, which publish no answers. */
  multiple_choice_answer: string | null;
  answers: { answer: string; answer_confidence: 'yes' | 'maybe' | 'no'; answer_id: number }[];
  image: { bytes: Uint8Array | null; path: string | null };
}

const string = (name: string) => ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' }) as const;
const int64 = (name: string) => ({ name, type: 'INT64', repetition_type: 'OPTIONAL' }) as const;

/** Writes rows as pyarrow writes a `datasets` export: strings, int64 ids, a list of answer structs, an image struct. */
export async function writeVqaParquet(path: string, rows: VqaRow[]): Promise<void> {
  const column = <K extends keyof VqaRow>(name: K) => rows.map((r) => r[name]);
  const columnData = [
    { name: 'question_type', data: column('question_type') },
    { name: 'multiple_choice_answer', data: column('multiple_choice_answer') },
    { name: 'answers', data: rows.map((r) => r.answers.map((a) => ({ ...a, answer_id: BigInt(a.answer_id) }))) },
    { name: 'image_id', data: rows.map((r) => BigInt(r.image_id)) },
    { name: 'answer_type', data: column('answer_type') },
    { name: 'question_id', data: rows.map((r) => BigInt(r.question_id)) },
    { name: 'question', data: column('question') },
    { name: 'image', data: column('image') },
  ];
  const schema = [
    { name: 'schema', num_children: columnData.length },
    string('question_type'),
    string('multiple_choice_answer'),
    { name: 'answers', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { name: 'element', repetition_type: 'OPTIONAL', num_children: 3 },
    string('answer'),
    string('answer_confidence'),
    int64('answer_id'),
    int64('image_id'),
    string('answer_type'),
    int64('question_id'),
    string('question'),
    { name: 'image', repetition_type: 'OPTIONAL', num_children: 2 },
    { name: 'bytes', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
    string('path'),
  ];
  // The writer's types describe its column sources loosely; the schema above is what fixes the layout.
  const buffer = parquetWriteBuffer({ columnData, schema } as unknown as Parameters<typeof parquetWriteBuffer>[0]);
  await writeFile(path, Buffer.from(buffer));
}

/** Ten human answers: `counts` says how many annotators gave each. */
export function humanAnswers(counts: Record<string, number>): VqaRow['answers'] {
  return Object.entries(counts)
    .flatMap(([answer, n]) => Array.from({ length: n }, () => answer))
    .map((answer, i) => ({ answer, answer_confidence: 'yes' as const, answer_id: i + 1 }));
}
