import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../temporal-dev/index.js';
import { spawnClotho, waitFor } from '../support/cli.js';
import { gsm8kCommand, gsm8kItems, gsm8kResponder } from '../support/gsm8k-model.js';
import { useScratch, temporalEnv } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';

const scratch = useScratch('clotho-outage-');

/** Resolves with the exit code, or rejects if the command is still running after `ms` (a bound, not a wait). */
function exitWithin(exited: Promise<number | string>, ms: number): Promise<number | string> {
  return Promise.race([
    exited,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still running ${ms} ms after SIGTERM`)), ms).unref()),
  ]);
}

describe('an inference server that is down (issue 40.5)', () => {
  it('is named on the progress line and printed once, stacks in a log file; SIGTERM ends the command in seconds', async () => {
    const home = scratch.path('home-down');
    const nobody = `http://127.0.0.1:${await freePort()}/v1`;
    const run = spawnClotho(
      gsm8kCommand('process', nobody, {
        'env.total_steps': 8,
        'env.group_size': 2,
        'env.max_groups_in_flight': 4,
        'env.data_path_to_save_groups': scratch.path('down.jsonl'),
        store: scratch.path('store-down'),
      }),
      { ...temporalEnv(), CLOTHO_HOME: home },
    );
    try {
      // The progress line says what is down as soon as the first call finds nobody there.
      await waitFor(() => run.stdout().includes(`inference server ${nobody} unreachable for`), 120_000, 'the outage on the progress line');
      expect(run.stdout()).toMatch(/unreachable for \d+ s, 4 groups waiting/);
      // Every group's call fails the same way (30 s without a healthy server, then retried): one line says so.
      await waitFor(() => run.stderr().includes('activity failed, ConnectionError'), 120_000, 'the first failed attempt');
      run.child.kill('SIGTERM');
      // Calls still wait for the server and retry (the SDK does not cancel local activities on shutdown): before,
      // the command ran them all out, minutes after SIGTERM.
      expect(await exitWithin(run.exited, 30_000)).toBe(130);
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
    const lines = run.stderr().trim().split('\n');
    expect(lines).toContain('clotho process: interrupted; the run is kept in Temporal and resumes with the same --env.run_id');
    // One line per distinct failure, no stack: before, 40 lines of stack per failed attempt of every group.
    expect(lines.filter((l) => l.includes('ConnectionError'))).toHaveLength(1);
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(run.stderr()).not.toMatch(/Activity failed|^\s+at /m);
    const logs = await readdir(`${home}/logs`);
    expect(logs).toHaveLength(1);
    expect(run.stderr()).toContain(`stack traces in ${home}/logs/${logs[0]}`);
    const log = await readFile(`${home}/logs/${logs[0]}`, 'utf8');
    expect(log).toContain('[WARN] Activity failed');
    expect(log).toMatch(/at acquire \(.*server-manager\.ts/);
  }, 300_000);

  it('stopped mid-run and started again: no item lost, none scored or failed for it', async () => {
    const port = await freePort();
    const answer = gsm8kResponder((_, sample) => sample === 0, 50);
    let model = await startScriptedOpenAI({ responder: answer, port });
    const out = scratch.path('outage.jsonl');
    const total = 8;
    const run = spawnClotho(
      gsm8kCommand('process', model.baseUrl, {
        'env.total_steps': total,
        'env.group_size': 2,
        'env.max_groups_in_flight': 2,
        'env.data_path_to_save_groups': out,
        store: scratch.path('store-outage'),
      }),
      { ...temporalEnv(), CLOTHO_HOME: scratch.path('home-outage') },
    );
    try {
      const delivered = async () => (existsSync(out) ? (await readFile(out, 'utf8')).split('\n').filter(Boolean).length : 0);
      await waitFor(async () => (await delivered()) >= 2, 120_000, 'two groups before the outage');
      await model.close();
      await waitFor(
        () => run.stdout().includes(`inference server ${model.baseUrl} unreachable`),
        60_000,
        'the outage on the progress line',
      );
      const before = await delivered();
      expect(before).toBeLessThan(total);
      model = await startScriptedOpenAI({ responder: answer, port });
      expect(await exitWithin(run.exited, 180_000)).toBe(0);
      const groups = (await readFile(out, 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { scores: number[]; messages: { role: string; content: string }[][] });
      // Every item once, each scored by its answers (sample 0 right, sample 1 wrong), none failed or dropped.
      const questions = gsm8kItems().map((item) => item.question);
      const items = groups.map((g) => questions.indexOf(g.messages[0]!.find((m) => m.role === 'user')!.content));
      expect(items.sort((a, b) => a - b)).toEqual([...Array(total).keys()]);
      for (const group of groups) expect(group.scores).toEqual([1, -1]);
      expect(run.stdout()).toContain(`groups ${total}/${total}`);
      expect(run.stdout()).toMatch(/failed 0 · dropped 0\n/);
      expect(run.stderr()).not.toMatch(/item \d+ failed/);
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
      await model.close();
    }
  }, 300_000);
});
