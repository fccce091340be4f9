import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureS3ServerBinary, startS3Server, type S3Server } from '../../test/support/s3-server.js';
import { openStore } from './open-store.js';
import { parseS3Url, S3Store } from './s3-store.js';
import { FileSystemStore, type StoredEntry, type TrajectoryStore } from './trajectory-store.js';

// The same contract for both backends: the S3 one against a real S3 server (VersityGW) on loopback.
const binary = await ensureS3ServerBinary();
if (binary.status === 'unreachable') console.warn(`S3 store tests skipped: ${binary.message}`);

async function entries(store: TrajectoryStore, prefix: string): Promise<StoredEntry[]> {
  const all: StoredEntry[] = [];
  for await (const entry of store.list(prefix)) all.push(entry);
  return all.sort((a, b) => a.key.localeCompare(b.key));
}

const keys = async (store: TrajectoryStore, prefix: string) => (await entries(store, prefix)).map((e) => e.key);

function contract(name: string, open: () => Promise<TrajectoryStore>) {
  describe(`${name}: the trajectory store contract`, () => {
    let store: TrajectoryStore;
    beforeAll(async () => {
      store = await open();
    });

    it('reads back what it wrote; a second put under a key replaces the first (a retried activity)', async () => {
      expect(await store.put('r/env/item-0/turn-0/prompt', { tokens: [1, 2, 3] })).toEqual({ key: 'r/env/item-0/turn-0/prompt' });
      await store.put('r/env/item-0/turn-0/prompt', { tokens: [4] });
      expect(await store.get({ key: 'r/env/item-0/turn-0/prompt' })).toEqual({ tokens: [4] });
      expect(await store.tryGet('r/env/item-0/turn-0/nothing')).toBeUndefined();
      await expect(store.get('r/env/item-0/turn-0/nothing')).rejects.toThrow(/no entry "r\/env\/item-0\/turn-0\/nothing"/);
      await expect(store.put('r/../escape', 1)).rejects.toThrow(/invalid store key/);
    });

    it('deletes a key, and a key that is not there without complaint', async () => {
      await store.put('d/k', 1);
      await store.delete('d/k');
      await store.delete('d/k');
      expect(await store.tryGet('d/k')).toBeUndefined();
    });

    it('lists entries under a prefix by whole segments, with their sizes', async () => {
      await store.put('l/env/item-1/group', { scores: [1, 0] });
      await store.put('l/env/item-1/turn-0/prompt', 'abc');
      await store.put('l/env/item-10/group', 7);
      await store.put('l/env/item-1x', 0);
      expect(await keys(store, 'l/env/item-1')).toEqual(['l/env/item-1/group', 'l/env/item-1/turn-0/prompt']);
      const group = (await entries(store, 'l/env/item-1/group'))[0]!;
      expect(group.size).toBe(JSON.stringify({ scores: [1, 0] }).length);
      expect(Math.abs(group.modified.getTime() - Date.now())).toBeLessThan(60_000);
      expect(await keys(store, 'l')).toEqual(['l/env/item-1/group', 'l/env/item-1/turn-0/prompt', 'l/env/item-10/group', 'l/env/item-1x']);
      expect(await keys(store, 'nothing/here')).toEqual([]);
      expect(await keys(store, '')).toEqual(expect.arrayContaining(['l/env/item-10/group', 'r/env/item-0/turn-0/prompt']));
    });

    it('deletes everything under a prefix, by whole segments, and writes there again afterwards', async () => {
      await store.put('p/env/item-2', 'the key itself');
      await store.put('p/env/item-2/group', 1);
      await store.put('p/env/item-2/turn-3/sample-0/call-1', 2);
      await store.put('p/env/item-20/group', 3);
      await store.deletePrefix('p/env/item-2');
      expect(await keys(store, 'p')).toEqual(['p/env/item-20/group']);
      await store.deletePrefix('p/env/item-2');
      await store.put('p/env/item-2/turn-0/prompt', 4);
      expect(await store.get('p/env/item-2/turn-0/prompt')).toBe(4);
    });
  });
}

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

contract('directory', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'clotho-store-'));
  dirs.push(dir);
  return openStore(dir);
});

describe.skipIf(binary.status !== 'ready')('s3:// store on a real S3 server', () => {
  let server: S3Server;
  const saved: Record<string, string | undefined> = {};
  beforeAll(async () => {
    server = await startS3Server((binary as { path: string }).path);
    await server.createBucket('clotho');
    // What a user sets: the SDK finds endpoint, credentials and region in the environment.
    for (const [name, value] of Object.entries(server.env)) {
      saved[name] = process.env[name];
      process.env[name] = value;
    }
  });
  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await server?.close();
  });

  contract('s3', async () => openStore('s3://clotho/runs/test'));

  it('keeps the layout of a directory store, under its prefix', async () => {
    const store = openStore('s3://clotho/layout') as S3Store;
    await store.put('run/env/item-0/group', { a: 1 });
    // Through a store without a prefix: the object is `<prefix>/<key>.json`.
    const root = openStore('s3://clotho') as S3Store;
    expect(await keys(root, 'layout')).toEqual(['layout/run/env/item-0/group']);
    expect(await root.get('layout/run/env/item-0/group')).toEqual({ a: 1 });
  });

  it('deletes more entries than one request takes', async () => {
    const store = new S3Store(parseS3Url('s3://clotho/many'), {}, { deleteBatch: 2 });
    await Promise.all(Array.from({ length: 5 }, (_, i) => store.put(`item-0/k-${i}`, i)));
    await store.put('item-00/k', 0);
    await store.deletePrefix('item-0');
    expect(await keys(store, '')).toEqual(['item-00/k']);
  });

  it('throws when the server is down, rather than answering "no entry", and works again once it is back', async () => {
    const store = openStore('s3://clotho/outage');
    await store.put('k', 1);
    await server.stop();
    try {
      await expect(store.tryGet('k')).rejects.toThrow();
      await expect(store.put('k', 2)).rejects.toThrow();
    } finally {
      await server.start();
    }
    expect(await store.get('k')).toBe(1);
  });

  it('throws for a bucket that does not exist (not a missing entry)', async () => {
    await expect(openStore('s3://no-such-bucket/x').tryGet('k')).rejects.toThrow(/bucket/i);
  });
});

describe('parseS3Url', () => {
  it('takes bucket and prefix, path style from the URL, then CLOTHO_S3_PATH_STYLE, then a loopback or IP endpoint', () => {
    expect(parseS3Url('s3://bucket/some/prefix/', {})).toEqual({ bucket: 'bucket', prefix: 'some/prefix', forcePathStyle: false });
    expect(parseS3Url('s3://bucket', {})).toEqual({ bucket: 'bucket', prefix: '', forcePathStyle: false });
    expect(parseS3Url('s3://bucket/p?path_style=1', {}).forcePathStyle).toBe(true);
    expect(parseS3Url('s3://bucket/p?path_style=false', { CLOTHO_S3_PATH_STYLE: '1' }).forcePathStyle).toBe(false);
    expect(parseS3Url('s3://bucket/p', { CLOTHO_S3_PATH_STYLE: 'true' }).forcePathStyle).toBe(true);
    expect(parseS3Url('s3://bucket/p', { AWS_ENDPOINT_URL: 'http://127.0.0.1:9000' }).forcePathStyle).toBe(true);
    expect(parseS3Url('s3://bucket/p', { AWS_ENDPOINT_URL_S3: 'http://localhost:9000' }).forcePathStyle).toBe(true);
    expect(parseS3Url('s3://bucket/p', { AWS_ENDPOINT_URL_S3: 'https://s3.eu-central-1.amazonaws.com' }).forcePathStyle).toBe(false);
  });

  it('refuses what it cannot use', () => {
    expect(() => parseS3Url('s3://bucket/p?region=x', {})).toThrow(/unknown parameter "region"/);
    expect(() => parseS3Url('s3://bucket/p?path_style=maybe', {})).toThrow(/path_style must be 1 or 0/);
    expect(() => parseS3Url('s3://key:secret@bucket/p', {})).toThrow(/environment variables or profile/);
    expect(() => parseS3Url('s3://bucket/a/../b', {})).not.toThrow(); // URL parsing resolves `..` away
    expect(() => parseS3Url('s3://bucket/a b', {})).toThrow(/invalid store key/);
  });
});

describe('openStore', () => {
  it('opens a directory, an s3:// URL, or the default directory, and refuses other URLs', () => {
    expect(openStore('/tmp/some-store')).toBeInstanceOf(FileSystemStore);
    expect((openStore('/tmp/some-store') as FileSystemStore).root).toBe('/tmp/some-store');
    expect(openStore('s3://bucket/prefix')).toBeInstanceOf(S3Store);
    expect((openStore(undefined, { CLOTHO_HOME: '/tmp/clotho-home' }) as FileSystemStore).root).toBe('/tmp/clotho-home/store');
    expect(() => openStore('gs://bucket/prefix')).toThrow(/only directories and s3:\/\/ URLs/);
    // A directory store given a URL refuses it rather than make a directory `s3:`.
    expect(() => new FileSystemStore('s3://bucket/prefix')).toThrow(/a URL, not a directory/);
  });
});
