import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startRecordingWandbServer, type RecordingWandbServer } from '../../../test/support/wandb-server.js';
import { decodeRecord } from './records.js';
import { readTransactionLog } from './transaction-log.js';
import { openWandbRun, wandbMode } from './wandb-run.js';

let dir: string | undefined;
let server: RecordingWandbServer | undefined;
afterEach(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = server = undefined;
});

const KEY = 'k'.repeat(40);
const info = { id: 'run00001', name: 'gsm8k-2026-11-21-abcdef', project: 'proj', config: { group_size: 2 } };
const table = { kind: 'table' as const, columns: ['text', 'score'], data: [['user: 1+1?', 1]] };

/** The history rows of a local run's transaction log. */
async function localHistory(runDir: string) {
  const [file] = (await readdir(runDir)).filter((f) => f.endsWith('.wandb'));
  const records = readTransactionLog(await readFile(join(runDir, file!))).map(decodeRecord);
  return {
    rows: records.filter((r) => r.history).map((r) => Object.fromEntries(r.history!.item.map((i) => [i.key, JSON.parse(i.value_json)]))),
    exit: records.find((r) => r.exit)?.exit,
  };
}

describe('openWandbRun', () => {
  it('streams scalars through the official JavaScript SDK and keeps the whole run locally, tables included', async () => {
    dir = await mkdtemp(join(tmpdir(), 'clotho-wandb-'));
    server = await startRecordingWandbServer();
    const notices: string[] = [];
    const env = { ...process.env, WANDB_BASE_URL: server.url, WANDB_API_KEY: KEY, WANDB_DIR: dir, WANDB_MODE: 'online' };
    const run = await openWandbRun(info, (line) => notices.push(line), env);
    expect(run.mode).toBe('online');
    run.log({ 'train/percent_correct': 0.5, 'train/rollouts': table }, 0);
    run.log({ 'train/percent_correct': 0.75 }, 1);
    await run.finish(0);

    expect(server.upserts()).toEqual([
      {
        name: 'run00001',
        project: 'proj',
        entity: 'tester',
        displayName: info.name,
        config: JSON.stringify({ group_size: { desc: null, value: 2 } }),
      },
    ]);
    expect(server.requests.every((r) => r.authorization === `Basic ${Buffer.from(`api:${KEY}`).toString('base64')}`)).toBe(true);
    const rows = server.history();
    expect(rows.map((r) => [r._step, r['train/percent_correct']])).toEqual([
      [0, 0.5],
      [1, 0.75],
    ]);
    expect(rows.some((r) => 'train/rollouts' in r)).toBe(false);
    const last = server.requests.at(-1)!;
    expect(last.path).toBe('/files/tester/proj/run00001/file_stream');
    expect(last.body).toEqual({ complete: true, exitcode: 0 });
    expect(notices).toEqual([
      `W&B: the JavaScript SDK cannot upload tables; they are kept in ${join(run.dir!, 'files', 'media', 'table')}`,
    ]);

    expect(run.dir).toMatch(/[/\\]wandb[/\\]run-\d{8}_\d{6}-run00001$/);
    const local = await localHistory(run.dir!);
    expect(local.rows.map((r) => [r._step, r['train/percent_correct']])).toEqual([
      [0, 0.5],
      [1, 0.75],
    ]);
    expect(local.rows[0]!['train/rollouts']).toMatchObject({ _type: 'table-file', nrows: 1 });
  });

  it('goes on locally, without crashing, when W&B cannot be reached', async () => {
    dir = await mkdtemp(join(tmpdir(), 'clotho-wandb-'));
    server = await startRecordingWandbServer();
    const closed = server.url;
    await server.close();
    server = undefined;
    const notices: string[] = [];
    const env = { ...process.env, WANDB_BASE_URL: closed, WANDB_API_KEY: KEY, WANDB_DIR: dir, WANDB_MODE: 'online' };
    const run = await openWandbRun(info, (line) => notices.push(line), env);
    run.log({ 'train/percent_correct': 0.5 }, 0);
    await run.finish(0);
    run.log({ 'train/percent_correct': 1 }, 1); // after the end: ignored, never thrown
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^W&B: streaming stopped: Unable to determine default entity/);
    expect(notices[0]).toContain(`wandb sync ${run.dir}`);
    const local = await localHistory(run.dir!);
    expect(local.rows.map((r) => r['train/percent_correct'])).toEqual([0.5]);
    expect(local.exit).toMatchObject({ exit_code: 0 });
  });

  it('without an API key, says so and keeps the run locally (the SDK never prompts)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'clotho-wandb-'));
    const notices: string[] = [];
    const { WANDB_API_KEY: _, ...rest } = process.env;
    const env = { ...rest, HOME: dir, WANDB_BASE_URL: 'http://127.0.0.1:9', WANDB_DIR: dir, WANDB_MODE: 'online' };
    const run = await openWandbRun(info, (line) => notices.push(line), env);
    run.log({ 'train/percent_correct': 0.5 }, 0);
    await run.finish(1);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^W&B: streaming stopped: .*WANDB_API_KEY/);
    expect((await localHistory(run.dir!)).exit).toMatchObject({ exit_code: 1 });
  });

  it('offline, sends nothing and writes an offline-run directory for `wandb sync`', async () => {
    dir = await mkdtemp(join(tmpdir(), 'clotho-wandb-'));
    server = await startRecordingWandbServer();
    const notices: string[] = [];
    const env = { ...process.env, WANDB_BASE_URL: server.url, WANDB_API_KEY: KEY, WANDB_DIR: dir, WANDB_MODE: 'offline' };
    const run = await openWandbRun(info, (line) => notices.push(line), env);
    run.log({ 'train/percent_correct': 0.5, 'train/rollouts': table }, 0);
    await run.finish(0);
    expect(server.requests).toEqual([]);
    expect(run.dir).toMatch(/[/\\]wandb[/\\]offline-run-\d{8}_\d{6}-run00001$/);
    expect(notices).toEqual([`W&B offline: logging to ${run.dir}; upload it with \`wandb sync ${run.dir}\``]);
    expect((await localHistory(run.dir!)).rows).toHaveLength(1);
  });

  it("follows W&B's switches: WANDB_MODE and WANDB_DISABLED", async () => {
    expect(wandbMode({})).toBe('online');
    expect(wandbMode({ WANDB_MODE: 'dryrun' })).toBe('offline');
    expect(wandbMode({ WANDB_MODE: 'disabled' })).toBe('disabled');
    expect(wandbMode({ WANDB_MODE: 'online', WANDB_DISABLED: 'true' })).toBe('disabled');
    const run = await openWandbRun(info, () => undefined, { WANDB_MODE: 'disabled' });
    expect(run.dir).toBeNull();
    run.log({ x: 1 }, 0);
    await run.finish(0);
  });
});
