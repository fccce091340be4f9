import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileSystemStore, JsonBytes } from './trajectory-store.js';

describe('JsonBytes', () => {
  it('is written byte for byte and read back as the JSON it holds', async () => {
    const store = new FileSystemStore(await mkdtemp(join(tmpdir(), 'clotho-json-bytes-')));
    const text = '{"tokens": [[1, 2]],\n "scores": [1.0], "note": "é"}';
    await store.put('api/x', new JsonBytes(Buffer.from(text)));
    expect(await readFile(join(store.root, 'api/x.json'), 'utf8')).toBe(text);
    expect(await store.get('api/x')).toEqual({ tokens: [[1, 2]], scores: [1], note: 'é' });
    await store.put('api/y', { a: 1 });
    expect(await readFile(join(store.root, 'api/y.json'), 'utf8')).toBe('{"a":1}');
  });
});
