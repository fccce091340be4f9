import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { datasetCacheDir, loadJsonl, resolveDataset } from './datasets.js';

const dir = mkdtempSync(join(tmpdir(), 'clotho-datasets-'));
const Row = z.object({ question: z.string(), answer: z.string() });
const GSM8K_TEST = fileURLToPath(new URL('../../environments/gsm8k/data/test.jsonl', import.meta.url));

describe('loadJsonl', () => {
  it('reads and validates every line of a real file', async () => {
    const rows = await loadJsonl(GSM8K_TEST, Row);
    expect(rows).toHaveLength(1319);
    expect(rows[0]!.question).toMatch(/^Janet’s ducks lay 16 eggs/);
  });

  it('skips blank lines', async () => {
    const path = join(dir, 'blank.jsonl');
    writeFileSync(path, '{"question":"a","answer":"1"}\n\n{"question":"b","answer":"2"}\n');
    expect((await loadJsonl(path, Row)).map((r) => r.question)).toEqual(['a', 'b']);
  });

  it('names the file, line and field of every bad line', async () => {
    const path = join(dir, 'bad.jsonl');
    writeFileSync(path, '{"question":"a","answer":"1"}\n{"question":2,"answer":"1"}\nnot json\n{"question":"c"}\n');
    const error = await loadJsonl(path, Row).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toContain(`${path}:2: question: Invalid input: expected string, received number`);
    expect(message).toMatch(new RegExp(`${path}:3: invalid JSON`));
    expect(message).toContain(`${path}:4: answer: Invalid input: expected string, received undefined`);
  });
});

describe('resolveDataset', () => {
  let server: Server;
  let requests = 0;
  let base = '';
  beforeAll(async () => {
    server = createServer((req, res) => {
      requests++;
      if (req.url === '/data.jsonl') res.end('{"question":"q","answer":"#### 1"}\n');
      else res.writeHead(404).end();
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it('uses a given path as is, and says so when it is missing', async () => {
    expect(await resolveDataset({ path: GSM8K_TEST, cacheName: 'x', url: `${base}/data.jsonl` })).toBe(GSM8K_TEST);
    await expect(resolveDataset({ path: join(dir, 'nope.jsonl'), cacheName: 'x', url: `${base}/data.jsonl` })).rejects.toThrow(
      `dataset file not found: ${join(dir, 'nope.jsonl')}`,
    );
  });

  it('downloads into the cache once, then reads the cached copy', async () => {
    const home = mkdtempSync(join(tmpdir(), 'clotho-home-'));
    const before = requests;
    const first = await resolveDataset({ cacheName: 'toy.jsonl', url: `${base}/data.jsonl`, home });
    expect(first).toBe(join(home, 'datasets', 'toy.jsonl'));
    expect(readFileSync(first, 'utf8')).toBe('{"question":"q","answer":"#### 1"}\n');
    expect(await resolveDataset({ cacheName: 'toy.jsonl', url: `${base}/data.jsonl`, home })).toBe(first);
    expect(requests - before).toBe(1);
    expect(readdirSync(join(home, 'datasets'))).toEqual(['toy.jsonl']);
  });

  it('tells the user to pass --env.data_path when the download fails', async () => {
    const home = mkdtempSync(join(tmpdir(), 'clotho-home-'));
    await expect(resolveDataset({ cacheName: 'missing.jsonl', url: `${base}/missing.jsonl`, home })).rejects.toThrow(
      /could not download .*missing\.jsonl \(HTTP 404.*pass --env\.data_path/,
    );
    // A port nobody listens on stands for being offline.
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((done) => closed.close(() => done()));
    await expect(resolveDataset({ cacheName: 'offline.jsonl', url: `http://127.0.0.1:${port}/x`, home })).rejects.toThrow(
      /ECONNREFUSED.*pass --env\.data_path <file>/,
    );
    expect(readdirSync(home)).toEqual([]);
  });

  it('caches under $CLOTHO_HOME by default', () => {
    const saved = process.env.CLOTHO_HOME;
    process.env.CLOTHO_HOME = '/tmp/clotho-home-x';
    try {
      expect(datasetCacheDir()).toBe('/tmp/clotho-home-x/datasets');
    } finally {
      if (saved === undefined) delete process.env.CLOTHO_HOME;
      else process.env.CLOTHO_HOME = saved;
    }
  });
});
