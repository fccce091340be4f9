/**
 * Test fixture: a few made-up chats in WildChat's layout (a `conversation` column of turns with `role`, `content` and
 * more, beside per-chat columns), written by the tests themselves as JSON lines or Parquet into a folder they own.
 * Not used by the environment.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';

interface Turn {
  role: 'user' | 'assistant';
  content: string;
  language: string;
  toxic: boolean;
}

interface Chat {
  conversation_id: string;
  model: string;
  conversation: Turn[];
  turn: number;
  language: string;
}

const turn = (role: Turn['role'], content: string): Turn => ({ role, content, language: 'English', toxic: false });

/** Three chats: one turn with a reply, two turns with replies, and a question nobody answered (no reference). */
export const FIXTURE_CHATS: Chat[] = [
  {
    conversation_id: 'c0',
    model: 'gpt-3.5-turbo',
    turn: 1,
    language: 'English',
    conversation: [turn('user', 'Suggest a name for a small bakery that sells sourdough.'), turn('assistant', 'How about "Rise & Crumb"?')],
  },
  {
    conversation_id: 'c1',
    model: 'gpt-4',
    turn: 2,
    language: 'English',
    conversation: [
      turn('user', 'At what temperature does water boil at sea level, in Celsius?'),
      turn('assistant', '100 °C.'),
      turn('user', 'And in Fahrenheit?'),
      turn('assistant', '212 °F.'),
    ],
  },
  {
    conversation_id: 'c2',
    model: 'gpt-4',
    turn: 1,
    language: 'English',
    conversation: [turn('user', 'Write a haiku about autumn rain.')],
  },
];

/** The last user message of each chat, in order: what identifies an item in a prompt. */
export const FIXTURE_QUESTIONS = FIXTURE_CHATS.map((c) => c.conversation.filter((t) => t.role === 'user').at(-1)!.content);

// WildChat's Parquet schema, the columns kept here: conversation is a list of structs.
const SCHEMA = [
  { name: 'root', num_children: 5 },
  { name: 'conversation_id', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
  { name: 'model', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
  { name: 'conversation', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', repetition_type: 'OPTIONAL', num_children: 4 },
  { name: 'content', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
  { name: 'language', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
  { name: 'role', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
  { name: 'toxic', type: 'BOOLEAN', repetition_type: 'OPTIONAL' },
  { name: 'turn', type: 'INT64', repetition_type: 'OPTIONAL' },
  { name: 'language', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
] as const;

/** Writes {@link FIXTURE_CHATS} (or `chats`) as `wildchat.jsonl` or `wildchat.parquet` in `dir`; returns its path. */
export async function writeFixture(dir: string, format: 'jsonl' | 'parquet', chats: Chat[] = FIXTURE_CHATS): Promise<string> {
  const path = join(dir, `wildchat.${format}`);
  if (format === 'jsonl') {
    await writeFile(path, chats.map((c) => JSON.stringify(c)).join('\n') + '\n');
    return path;
  }
  const column = <K extends keyof Chat>(name: K) => chats.map((c) => c[name]);
  const buffer = parquetWriteBuffer({
    columnData: [
      { name: 'conversation_id', data: column('conversation_id') },
      { name: 'model', data: column('model') },
      { name: 'conversation', data: column('conversation') },
      { name: 'turn', data: chats.map((c) => BigInt(c.turn)) },
      { name: 'language', data: column('language') },
    ],
    schema: SCHEMA.map((element) => ({ ...element })) as Parameters<typeof parquetWriteBuffer>[0]['schema'],
  });
  await writeFile(path, Buffer.from(buffer));
  return path;
}
