import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { FileSystemStore } from '../store/trajectory-store.js';
import { runClotho } from '../../test/support/cli.js';
import { planProblems } from '../../test/support/plans.js';
import { recordRunConfig, runConfigKey, type RunConfigRecord } from './run-config.js';
import { envRunSettings, planRun } from '../cli/run.js';

const loggedTools = fileURLToPath(new URL('../../test/support/logged-tools-env.ts', import.meta.url));
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-run-config-'));
});

/** Plans a command of a run in the test's store, and records the run's config as starting its workers would. */
async function start(argv: string[]) {
  const plan = await planRun([...argv, '--store', dir]);
  if (plan.runConfig?.how === 'new') await recordRunConfig(plan.store, plan.runId, plan.runConfig.record);
  return plan;
}

const refusal = (argv: string[]) => planProblems([...argv, '--store', dir]);

describe('the run carries its environment config', () => {
  it('records the first command’s run fields, without its per-process ones, and puts their digest in the env-run input', async () => {
    const plan = await start(['gsm8k', '--env.split', 'test', '--env.group_size', '3', '--env.data_path_to_save_groups', '/tmp/a.jsonl']);
    expect(plan.runConfig?.how).toBe('new');
    const record = await new FileSystemStore(dir).get<RunConfigRecord>(runConfigKey(plan.runId, 'gsm8k'));
    expect(record.env).toMatchObject({ split: 'test', group_size: 3 });
    expect(record.env).not.toHaveProperty('run_id');
    expect(record.env).not.toHaveProperty('data_path_to_save_groups');
    expect(record.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(envRunSettings(plan, true).configDigest).toBe(record.digest);
  });

  it('gives a later command of the run the run’s fields, whatever its own defaults, and keeps its per-process ones', async () => {
    const first = await start(['gsm8k', '--env.split', 'test', '--env.group_size', '3']);
    const worker = await planRun(['gsm8k', '--env.run_id', first.runId, '--env.data_path_to_save_groups', '/tmp/b.jsonl', '--store', dir]);
    expect(worker.runConfig?.how).toBe('adopted');
    expect(worker.config.env).toMatchObject({
      split: 'test',
      group_size: 3,
      run_id: first.runId,
      data_path_to_save_groups: '/tmp/b.jsonl',
    });
    expect(worker.runConfig?.record.digest).toBe(first.runConfig?.record.digest);
    // Saying the run's own values again is no conflict.
    expect((await planRun(['gsm8k', '--env.run_id', first.runId, '--env.split', 'test', '--store', dir])).config.env.split).toBe('test');
  });

  it('refuses a command whose flags differ from the run’s, naming each field with both values', async () => {
    const first = await start(['gsm8k', '--env.split', 'test', '--env.group_size', '3']);
    const problems = await refusal(['gsm8k', '--env.run_id', first.runId, '--env.split', 'train', '--env.group_size', '4']);
    expect(problems[0]).toMatch(new RegExp(`^run ${first.runId} \\(gsm8k\\) carries its own environment config`));
    expect(problems).toContain('--env.split: this command says "train", the run has "test"');
    expect(problems).toContain('--env.group_size: this command says 4, the run has 3');
  });

  it('lets a worker leave out even the fields its environment requires: the run has them', async () => {
    const first = await start([loggedTools, '--env.log_path', '/tmp/calls.log', '--env.keep_going', 'true']);
    const worker = await planRun([loggedTools, '--env.run_id', first.runId, '--store', dir]);
    expect(worker.config.env).toMatchObject({ log_path: '/tmp/calls.log', keep_going: true });
    // A new run still needs them.
    await expect(planRun([loggedTools, '--store', dir])).rejects.toThrow(/log_path/);
  });

  it('clotho worker with a differing flag refuses to start, before it connects anywhere, and says which flag', async () => {
    const first = await start(['gsm8k', '--env.split', 'test']);
    const { code, stderr } = await runClotho(['worker', 'gsm8k', '--env.run_id', first.runId, '--env.split', 'train', '--store', dir]);
    expect(code).toBe(2);
    expect(stderr).toContain('--env.split: this command says "train", the run has "test"');
  });
});
