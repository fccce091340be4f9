import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { itemFromRow, loadItems } from './data.js';
import { FIXTURE_CHATS, writeFixture } from './fixture.js';

const fields = { promptField: 'conversation', referenceField: null };

describe('rlaif data', () => {
  it('reads WildChat-shaped chats from Parquet and JSON lines alike: the prompt up to the last user turn, the reply as reference', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-rlaif-data-'));
    const fromParquet = await loadItems(await writeFixture(dir, 'parquet'), fields);
    const fromJsonl = await loadItems(await writeFixture(dir, 'jsonl'), fields);
    expect(fromParquet).toEqual(fromJsonl);
    expect(fromParquet).toEqual([
      { prompt: [{ role: 'user', content: FIXTURE_CHATS[0]!.conversation[0]!.content }], reference: 'How about "Rise & Crumb"?' },
      {
        prompt: [
          { role: 'user', content: 'At what temperature does water boil at sea level, in Celsius?' },
          { role: 'assistant', content: '100 °C.' },
          { role: 'user', content: 'And in Fahrenheit?' },
        ],
        reference: '212 °F.',
      },
      { prompt: [{ role: 'user', content: 'Write a haiku about autumn rain.' }], reference: null },
    ]);
  });

  it('takes a plain prompt string and a reference column', () => {
    const row = { question: 'Name a colour.', best: 'Red.', conversation: 'ignored' };
    expect(itemFromRow(row, { promptField: 'question', referenceField: 'best' })).toEqual({
      prompt: [{ role: 'user', content: 'Name a colour.' }],
      reference: 'Red.',
    });
    // A reference column overrides the conversation's own last reply, also when it is empty for the row.
    const chat = {
      conversation: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello' },
      ],
      best: null,
    };
    expect(itemFromRow(chat, { promptField: 'conversation', referenceField: 'best' }).reference).toBeNull();
  });

  it('reports every bad row by number at once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-rlaif-data-'));
    const path = join(dir, 'bad.jsonl');
    const rows = [
      { conversation: [{ role: 'user', content: 'fine' }] },
      { conversation: [{ role: 'user' }] },
      { prompt: 'wrong column' },
      { conversation: [{ role: 'assistant', content: 'only a reply' }] },
    ];
    await writeFile(path, rows.map((r) => JSON.stringify(r)).join('\n'));
    const error = await loadItems(path, fields).catch((e: Error) => e);
    expect(String(error)).toContain(`invalid prompts in ${path}`);
    expect(String(error)).toContain('row 2: conversation[0]: expected {role, content} with string values');
    expect(String(error)).toContain('row 3: conversation: expected a prompt string or a list of {role, content}, got no such column');
    expect(String(error)).toContain('row 4: conversation: no user turn to answer');
    expect(String(error)).not.toContain('row 1');
    await writeFile(path, '\n');
    await expect(loadItems(path, fields)).rejects.toThrow(`no prompts in ${path}`);
  });
});
