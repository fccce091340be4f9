import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { deletedFrame, groupOfRecord, JournalDamagedError, journalFrame, readJournal } from './group-journal.js';
import { repoRoot } from './paths.js';
import { FileSystemStore, JsonBytes } from './trajectory-store.js';

const run = promisify(execFile);

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function freshStore(): Promise<{ dir: string; store: FileSystemStore }> {
  const dir = await mkdtemp(join(tmpdir(), 'clotho-journal-'));
  dirs.push(dir);
  return { dir, store: new FileSystemStore(dir) };
}

async function keys(store: FileSystemStore, prefix: string): Promise<string[]> {
  const all: string[] = [];
  for await (const { key } of store.list(prefix)) all.push(key);
  return all.sort();
}

describe('a rollout group’s journal', () => {
  it('holds the records inside a group, and nothing else', () => {
    expect(groupOfRecord('run/env/item-3/turn-0/generated')).toBe('run/env/item-3');
    expect(groupOfRecord('team/run/env/item-0/group')).toBe('team/run/env/item-0');
    expect(groupOfRecord('run/env/item-3')).toBeNull();
    expect(groupOfRecord(`api/${'a'.repeat(64)}`)).toBeNull();
    expect(groupOfRecord('batcher/run/state')).toBeNull();
  });

  it('reads the newest frame of each key; a deleted key, a frame cut short and a write in progress are not values', () => {
    const bytes = Buffer.concat([
      journalFrame('g/e/item-0/a', '{"v":1}'),
      journalFrame('g/e/item-0/b', '[1,2,3]'),
      journalFrame('g/e/item-0/a', '{"v":2}'),
      // A kill in the middle of a write: the frame's start, then the next writer's frame on a line of its own.
      journalFrame('g/e/item-0/c', '123456').subarray(0, 18),
      journalFrame('g/e/item-0/d', '"after"'),
      deletedFrame('g/e/item-0/b'),
      // Another process's write, not yet whole.
      journalFrame('g/e/item-0/e', '"partial"').subarray(0, 20),
    ]);
    const { entries, read } = readJournal(bytes);
    expect(Object.fromEntries([...entries].map(([k, v]) => [k, v === null ? null : JSON.parse(v.toString())]))).toEqual({
      'g/e/item-0/a': { v: 2 },
      'g/e/item-0/b': null,
      'g/e/item-0/d': 'after',
    });
    // Up to the start of the unfinished frame (after its leading line feed): the next read goes on from there.
    expect(read).toBe(bytes.length - 19);
  });

  it('still reads journals written before frames had checksums', () => {
    const old = Buffer.from('\ng/e/item-0/a\t7\t{"v":1}\n\ng/e/item-0/b\t-\t\n\ng/e/item-0/a\t7\t{"v":2}\n');
    const { entries, read } = readJournal(old);
    expect(Object.fromEntries([...entries].map(([k, v]) => [k, v === null ? null : JSON.parse(v.toString())]))).toEqual({
      'g/e/item-0/a': { v: 2 },
      'g/e/item-0/b': null,
    });
    expect(read).toBe(old.length);
  });

  it('reports a frame whose bytes do not match its checksum, and a line that is no frame, by their offsets', () => {
    const first = journalFrame('g/e/item-0/a', '{"v":1}');
    const flipped = journalFrame('g/e/item-0/b', '{"v":2}');
    // One byte of the value changed in place (same length): only a checksum can tell.
    flipped[flipped.length - 3] = '3'.charCodeAt(0);
    const garbage = Buffer.from('\n3,4]}\n');
    const bytes = Buffer.concat([first, flipped, garbage, journalFrame('g/e/item-0/c', '1')]);
    const { entries, damaged } = readJournal(bytes);
    expect([...entries.keys()]).toEqual(['g/e/item-0/a', 'g/e/item-0/c']);
    expect(damaged).toEqual([
      { offset: first.length + 1, reason: expect.stringMatching(/checksum/) },
      { offset: first.length + flipped.length + 1, reason: expect.stringMatching(/not a frame/) },
    ]);
  });

  it('reports a frame longer than its length says (writers interleaved), and skips one cut short quietly', () => {
    const whole = journalFrame('g/e/item-0/a', '{"v":1}');
    const cut = journalFrame('g/e/item-0/b', '{"v":"long"}').subarray(0, 24);
    const longer = Buffer.from(whole.toString().replace('{"v":1}', '{"v":10}'));
    const { entries, damaged } = readJournal(Buffer.concat([cut, whole, longer]));
    expect([...entries.keys()]).toEqual(['g/e/item-0/a']);
    expect(damaged).toEqual([{ offset: cut.length + whole.length + 1, reason: expect.stringMatching(/8 bytes where its header says 7/) }]);
  });

  it('keeps bytes kept as posted, pretty-printed ones too, as the same JSON', () => {
    const pretty = JSON.stringify({ tokens: [[1, 2]], note: 'a\nb' }, null, 2);
    const [value] = readJournal(journalFrame('g/e/item-0/group', Buffer.from(pretty))).entries.values();
    expect(JSON.parse(value!.toString())).toEqual({ tokens: [[1, 2]], note: 'a\nb' });
  });

  it('is one file per group, appended to by every record of the group', async () => {
    const { dir, store } = await freshStore();
    await store.put('run/env/item-0/turn-0/generated', { t: 0 });
    await store.put('run/env/item-0/turn-0/sample-0/call-0', { c: 0 });
    await store.put('run/env/item-0/group', new JsonBytes(Buffer.from('{"scores": [1]}')));
    expect(await readdir(join(dir, 'run/env'))).toEqual(['item-0.journal']);
    expect(await store.get('run/env/item-0/group')).toEqual({ scores: [1] });
    expect(await keys(store, 'run/env/item-0/turn-0')).toEqual([
      'run/env/item-0/turn-0/generated',
      'run/env/item-0/turn-0/sample-0/call-0',
    ]);
  });

  it('skips a record whose write a kill cut short, and keeps every record written after it', async () => {
    const { dir, store } = await freshStore();
    await store.put('run/env/item-0/turn-0/generated', { t: 0 });
    await appendFile(join(dir, 'run/env/item-0.journal'), journalFrame('run/env/item-0/turn-1/generated', '{"t":1}').subarray(0, 25));
    await store.put('run/env/item-0/turn-1/sample-0/call-0', { c: 1 });
    expect(await store.tryGet('run/env/item-0/turn-1/generated')).toBeUndefined();
    expect(await store.get('run/env/item-0/turn-1/sample-0/call-0')).toEqual({ c: 1 });
    expect(await keys(store, 'run')).toEqual(['run/env/item-0/turn-0/generated', 'run/env/item-0/turn-1/sample-0/call-0']);
  });

  it('refuses to read a group whose journal has a damaged frame, naming the journal and the offset', async () => {
    const { dir, store } = await freshStore();
    await store.put('run/env/item-0/turn-0/generated', { t: 0 });
    const journal = join(dir, 'run/env/item-0.journal');
    const frame = journalFrame('run/env/item-0/turn-1/generated', '{"t":1}');
    frame[frame.length - 3] = '7'.charCodeAt(0);
    const offset = (await readFile(journal)).length + 1;
    await appendFile(journal, frame);
    const reading = store.tryGet('run/env/item-0/turn-0/generated');
    await expect(reading).rejects.toThrow(JournalDamagedError);
    await expect(reading).rejects.toThrow(`${journal}: damaged frame at byte ${offset}`);
    // Once seen, every later read of the group says so too.
    await expect(new FileSystemStore(dir).tryGet('run/env/item-0/turn-0/generated')).rejects.toThrow(`byte ${offset}`);
    await expect(store.tryGet('run/env/item-0/turn-1/generated')).rejects.toThrow('local disk only; s3:// across hosts');
  });

  it('keeps every record of writers in several processes at once', async () => {
    const { dir, store } = await freshStore();
    const writer = (w: number) =>
      `import { FileSystemStore } from ${JSON.stringify(new URL('./trajectory-store.ts', import.meta.url).href)};
       const store = new FileSystemStore(${JSON.stringify(dir)});
       for (let i = 0; i < 50; i++) await store.put('run/env/item-0/w-${w}/r-' + i, { w: ${w}, i, pad: 'x'.repeat(100_000) });`;
    await Promise.all(
      [0, 1, 2, 3].map((w) => run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', writer(w)], { cwd: repoRoot })),
    );
    expect(await keys(store, 'run/env/item-0')).toHaveLength(200);
    for (const w of [0, 1, 2, 3]) expect(await store.get(`run/env/item-0/w-${w}/r-49`)).toMatchObject({ w, i: 49 });
  });

  it('still reads, lists and deletes a group’s records written as files by an older Clotho; a newer write wins', async () => {
    const { dir, store } = await freshStore();
    await mkdir(join(dir, 'run/env/item-0/turn-0'), { recursive: true });
    await writeFile(join(dir, 'run/env/item-0/turn-0/prompt.json'), '{"old":true}');
    await writeFile(join(dir, 'run/env/item-0/turn-0/generated.json'), '{"old":1}');
    expect(await store.get('run/env/item-0/turn-0/prompt')).toEqual({ old: true });
    await store.put('run/env/item-0/turn-0/generated', { new: 1 });
    expect(await store.get('run/env/item-0/turn-0/generated')).toEqual({ new: 1 });
    await store.delete('run/env/item-0/turn-0/generated');
    expect(await store.tryGet('run/env/item-0/turn-0/generated')).toBeUndefined();
    expect(await keys(store, 'run/env/item-0')).toEqual(['run/env/item-0/turn-0/prompt']);
    await store.deletePrefix('run/env/item-0');
    expect(await keys(store, '')).toEqual([]);
  });

  it('reads what another process appended since its last read, and a group deleted and written again afresh', async () => {
    const { dir, store } = await freshStore();
    const other = new FileSystemStore(dir);
    await store.put('run/env/item-0/turn-0/generated', { t: 0 });
    expect(await other.get('run/env/item-0/turn-0/generated')).toEqual({ t: 0 });
    await store.put('run/env/item-0/turn-1/generated', { t: 1 });
    await store.put('run/env/item-0/turn-0/generated', { t: 'again' });
    expect(await other.get('run/env/item-0/turn-1/generated')).toEqual({ t: 1 });
    expect(await other.get('run/env/item-0/turn-0/generated')).toEqual({ t: 'again' });
    // The group is deleted elsewhere and written anew, longer than before: nothing of the old journal survives here.
    await store.deletePrefix('run/env/item-0');
    await store.put('run/env/item-0/turn-5/generated', { t: 5, pad: 'x'.repeat(200) });
    expect(await other.tryGet('run/env/item-0/turn-1/generated')).toBeUndefined();
    expect(await other.get('run/env/item-0/turn-5/generated')).toMatchObject({ t: 5 });
  });

  it('deletes the records under a prefix inside a group, and writes there again afterwards', async () => {
    const { store } = await freshStore();
    await store.put('run/env/item-0/harness/sample-0/call-0', 1);
    await store.put('run/env/item-0/harness/sample-1/call-0', 2);
    await store.put('run/env/item-0/harness-x', 3);
    await store.deletePrefix('run/env/item-0/harness');
    expect(await keys(store, 'run/env/item-0')).toEqual(['run/env/item-0/harness-x']);
    await store.put('run/env/item-0/harness/sample-0/call-0', 4);
    expect(await store.get('run/env/item-0/harness/sample-0/call-0')).toBe(4);
  });
});
