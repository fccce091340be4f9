/** Writers of MMLU's real layouts, for tests that generate their own small data sets (never a copy of MMLU). */
import { parquetWriteBuffer } from 'hyparquet-writer';
import type { McqaItem } from './mmlu.js';

/** Rows of the original release's `<subject>_<split>.csv`: RFC 4180 quoting, no header, the right letter last. */
export function mmluCsv(items: McqaItem[]): string {
  const row = (item: McqaItem) =>
    [item.question, ...item.choices, 'ABCD'[item.answer]!].map((cell) => `"${cell.replace(/"/g, '""')}"`).join(',');
  return items.map(row).join('\n') + '\n';
}

/** The hub's `cais/mmlu` as JSON lines (`datasets`' `to_json`): question, subject, choices, answer index. */
export function mmluJsonl(items: McqaItem[]): string {
  return (
    items.map((i) => JSON.stringify({ question: i.question, subject: i.subject, choices: i.choices, answer: i.answer })).join('\n') + '\n'
  );
}

/** The hub's `cais/mmlu` as Parquet, as Arrow writes it: strings, `choices` a three-level LIST, `answer` an int64. */
export function mmluParquet(items: McqaItem[]): Buffer {
  return Buffer.from(
    parquetWriteBuffer({
      columnData: [
        { name: 'question', data: items.map((i) => i.question) },
        { name: 'subject', data: items.map((i) => i.subject) },
        { name: 'choices', data: items.map((i) => i.choices) },
        { name: 'answer', data: items.map((i) => BigInt(i.answer)) },
      ],
      schema: [
        { name: 'schema', num_children: 4 },
        { name: 'question', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
        { name: 'subject', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
        { name: 'choices', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
        { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
        { name: 'element', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
        { name: 'answer', type: 'INT64', repetition_type: 'OPTIONAL' },
      ],
    }),
  );
}
