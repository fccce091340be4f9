import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openLocalRun } from './local-run.js';
import { decodeRecord } from './records.js';
import { readTransactionLog } from './transaction-log.js';

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
  root = undefined;
});

const values = (items: { key: string; value_json: string }[] = []) =>
  Object.fromEntries(items.map((i) => [i.key, JSON.parse(i.value_json)]));

describe('openLocalRun', () => {
  it('writes the run directory the Python SDK writes offline: transaction log, table files, summary', async () => {
    root = await mkdtemp(join(tmpdir(), 'clotho-wandb-'));
    const now = new Date('2026-11-21T12:15:00.250Z');
    const run = await openLocalRun(
      { id: 'abc12345', name: 'gsm8k-2026-11-21-qwerty', project: 'proj', group: 'grp', config: { group_size: 4, wandb_name: null } },
      { root, offline: true, now },
    );
    expect(run.dir).toBe(join(root, 'wandb', 'offline-run-20261121_121500-abc12345'));
    expect(run.file).toBe(join(run.dir, 'run-abc12345.wandb'));
    await run.log(
      { 'train/percent_correct': 0.5, 'train/rollouts': { kind: 'table', columns: ['text', 'score'], data: [['user: hi', 1]] } },
      0,
    );
    await run.log({ 'train/percent_correct': 0.75 }, 1);
    await run.finish(0);

    const records = readTransactionLog(await readFile(run.file)).map(decodeRecord);
    expect(records.map((r) => Object.keys(r).find((k) => k !== 'num' && k !== 'uuid'))).toEqual([
      'header',
      'run',
      'files',
      'history',
      'history',
      'summary',
      'exit',
      'final',
    ]);
    expect(records.map((r) => r.num)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const [, first, files, h0, h1, summary, exit] = records;
    expect(first!.run).toMatchObject({
      run_id: 'abc12345',
      project: 'proj',
      run_group: 'grp',
      display_name: 'gsm8k-2026-11-21-qwerty',
      start_time: { seconds: 1795263300, nanos: 250_000_000 },
    });
    expect(values(first!.run!.config!.update)).toEqual({ group_size: 4, wandb_name: null });

    const path = files!.files!.files[0]!.path;
    expect(path).toMatch(/^media\/table\/train\/rollouts_0_[0-9a-f]{20}\.table\.json$/);
    expect(files!.files!.files[0]!.policy).toBe(0); // NOW
    const tableText = await readFile(join(run.dir, 'files', path), 'utf8');
    expect(JSON.parse(tableText)).toEqual({ columns: ['text', 'score'], data: [['user: hi', 1]] });

    expect(h0!.history!.step.num).toBe(0);
    const row0 = values(h0!.history!.item);
    expect(row0).toMatchObject({ 'train/percent_correct': 0.5, _step: 0 });
    expect(row0['train/rollouts']).toMatchObject({ _type: 'table-file', path, ncols: 2, nrows: 1, size: Buffer.byteLength(tableText) });
    expect(typeof row0._runtime).toBe('number');
    expect(typeof row0._timestamp).toBe('number');
    expect(h1!.history!.step.num).toBe(1);
    expect(values(h1!.history!.item)).toMatchObject({ 'train/percent_correct': 0.75, _step: 1 });
    expect(values(summary!.summary!.update)).toMatchObject({ 'train/percent_correct': 0.75, _step: 1 });
    expect(exit!.exit).toMatchObject({ exit_code: 0 });
    expect(JSON.parse(await readFile(join(run.dir, 'files', 'wandb-summary.json'), 'utf8'))).toMatchObject({
      'train/percent_correct': 0.75,
    });
  });

  it('names an online run directory run-<stamp>-<id> and records a failing exit code', async () => {
    root = await mkdtemp(join(tmpdir(), 'clotho-wandb-'));
    const run = await openLocalRun(
      { id: 'zz99', name: 'n', project: 'p', config: {} },
      { root, offline: false, now: new Date('2026-01-02T03:04:05Z') },
    );
    await run.finish(130);
    expect(await readdir(join(root, 'wandb'))).toEqual(['run-20260102_030405-zz99']);
    const records = readTransactionLog(await readFile(run.file)).map(decodeRecord);
    expect(records.find((r) => r.exit)?.exit).toMatchObject({ exit_code: 130 });
  });
});
