import { execFileSync } from 'node:child_process';
import { readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  arithmeticResponder,
  ATROPOS_ENVS,
  atroposPython,
  atroposWorkerPids,
  clothoStderr,
  endsWithin,
  processGroupPids,
  recordHistory,
} from '../support/atropos.js';
import { runClotho, spawnClotho, waitFor } from '../support/cli.js';
import { completeLines, readGroups } from '../support/groups.js';
import { temporalEnv, useScratch } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';
import { testConnection, uniqueId } from '../support/temporal.js';

const scratch = useScratch('clotho-atropos-process-');
let env: Record<string, string>;
let tokenizer: string;

// A fresh clone installs the Python venv here (about 90 s), once.
beforeAll(async () => {
  const python = await atroposPython(scratch.path());
  tokenizer = python.tokenizer;
  env = { ...temporalEnv(), ...python.env };
}, 300_000);

/** `clotho process --atropos <envs>/<file>` with the test tokenizer, writing into the scratch folder. */
function atroposProcess(file: string, out: string, baseUrl: string, ...flags: string[]): string[] {
  return [
    'process',
    '--atropos',
    join(ATROPOS_ENVS, file),
    '--env.tokenizer_name',
    tokenizer,
    '--openai.base_url',
    baseUrl,
    '--env.data_path_to_save_groups',
    out,
    '--store',
    scratch.path('store'),
    ...flags,
  ];
}

describe('clotho process --atropos', () => {
  it("writes an Atropos environment's groups to JSONL and HTML with the progress line", async () => {
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder() }));
    const out = scratch.path('arithmetic.jsonl');
    const runId = uniqueId('atropos');
    const args = atroposProcess('arithmetic_env.py', out, model.baseUrl, '--env.total_steps', '5', '--env.run_id', runId);
    const { code, stdout, stderr } = await runClotho(args, env);
    expect(clothoStderr(stderr)).toBe('');
    expect(code).toBe(0);
    // Atropos's timing stats, from its wandb_log: the mean time a group's collect took.
    expect(stdout).toMatch(/groups 5\/5 · 0 in flight · mean score -0\.500 · failed 0 · dropped 0 · collect \d+\.\d\d s/);
    const groups = await readGroups(out);
    expect(groups).toHaveLength(5);
    for (const group of groups) expect(group.scores).toEqual([1, -1, -1, -1]);
    // Floats, as Atropos writes them (json.dumps of the environment's 1.0 and -1.0), not JavaScript's integers.
    expect(await readFile(out, 'utf8')).toContain('"scores":[1.0,-1.0,-1.0,-1.0]');
    expect(await readFile(scratch.path('arithmetic.html'), 'utf8')).toContain('5 groups');
    await recordHistory('atropos-rollout-group-scored.json', `clotho/${runId}/arithmetic_env/item-0`);
  });

  it("shows what the environment prints, each line marked as the environment's", async () => {
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder() }));
    const out = scratch.path('printing.jsonl');
    const { code, stderr } = await runClotho(atroposProcess('tokens_only_env.py', out, model.baseUrl, '--env.total_steps', '2'), env);
    expect(code, stderr).toBe(0);
    expect(stderr).toContain('[env] What is 1 + 10? 1 of 2 right\n');
    expect(stderr).toContain('[env] What is 2 + 20? 1 of 2 right\n');
  });

  it('runs the environment that keeps checkpoints to the end', async () => {
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder() }));
    const out = scratch.path('checkpointed.jsonl');
    const args = atroposProcess('arithmetic_env.py:CheckpointedArithmeticEnv', out, model.baseUrl, '--env.total_steps', '3');
    const { code, stdout, stderr } = await runClotho(args, env);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('groups 3/3 · 0 in flight');
    expect((await readGroups(out)).map((g) => g.scores)).toEqual([
      [1, -1, -1, -1],
      [1, -1, -1, -1],
      [1, -1, -1, -1],
    ]);
  });

  it('counts the groups an environment declines by reason, and serves the items it puts back', async () => {
    const out = scratch.path('declining.jsonl');
    const runId = uniqueId('atropos-declining');
    const args = atroposProcess('declining_env.py', out, 'http://127.0.0.1:9/v1', '--env.total_steps', '4', '--env.run_id', runId);
    const { code, stdout } = await runClotho(args, env);
    expect(code).toBe(0);
    const delivered = (await readGroups(out)).length;
    const declined = 4 - delivered;
    expect(declined).toBeGreaterThan(0);
    expect(stdout).toContain(`groups 4/4 · 0 in flight · mean score 0.500 · failed 0 · dropped ${declined} (declined ${declined})`);
    await recordHistory('atropos-env-run-batched-backlog.json', `clotho/${runId}/declining_env`);
  });

  it("refuses to resume a run with flags that build another config than the run's", async () => {
    const runId = uniqueId('atropos-config');
    const args = atroposProcess('flaky_env.py', scratch.path(`${runId}.jsonl`), 'http://127.0.0.1:9/v1', '--env.total_steps', '1');
    expect((await runClotho([...args, '--env.run_id', runId], env)).code).toBe(0);
    const { code, stderr } = await runClotho([...args, '--env.run_id', runId, '--env.group_size', '3'], env);
    expect(code).toBe(2);
    expect(stderr).toContain('--env.group_size: this command says 3, the run has 2');
    expect(stderr).toContain("give the run's Atropos flags again");
  });

  it('fails a group whose collect_trajectories keeps raising, with the Python traceback in clotho inspect', async () => {
    const runId = uniqueId('atropos-fail');
    const args = atroposProcess('flaky_env.py', scratch.path(`${runId}.jsonl`), 'http://127.0.0.1:9/v1', '--env.total_steps', '1');
    const failing = { ...env, FLAKY_ENV_ALWAYS_FAIL: '1' };
    const { code, stdout, stderr } = await runClotho([...args, '--env.run_id', runId, '--steps.generate.maximum_attempts', '2'], failing);
    expect(code).toBe(1);
    expect(stdout).toContain('groups 1/1 · 0 in flight · mean score – · failed 1');
    expect(stderr).toContain('item 0 failed: inference server hiccup on item 1');
    const inspect = await runClotho(['inspect', `clotho/${runId}/flaky_env/item-0`], env);
    expect(inspect.stdout).toContain('atroposCollect [attempt 2, FAILED]');
    expect(inspect.stdout).toMatch(/traceback:[\s\S]*flaky_env\.py", line \d+, in collect_trajectories/);
    await recordHistory('atropos-rollout-group-failed.json', `clotho/${runId}/flaky_env/item-0`);
  });

  it('drops a group whose collect runs past worker_timeout as timeout, counted and not retried, and finishes the run', async () => {
    // SlowEnv's second item takes 30 s; worker_timeout is 3 s. Two attempts at most: a retried collect fails the run.
    const runId = uniqueId('atropos-timeout');
    const out = scratch.path(`${runId}.jsonl`);
    const flags = ['--env.total_steps', '3', '--env.worker_timeout', '3', '--env.run_id', runId, '--steps.generate.maximum_attempts', '2'];
    const { code, stdout, stderr } = await runClotho(atroposProcess('edge_envs.py:SlowEnv', out, 'http://127.0.0.1:9/v1', ...flags), env);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('groups 3/3 · 0 in flight · mean score 0.500 · failed 0 · dropped 1 (timeout 1)');
    expect(await readGroups(out)).toHaveLength(2);
    await recordHistory('atropos-env-run-loop-timeout.json', `clotho/${runId}/SlowEnv`);
  });

  it('runs items of 250 KB sixteen at a time, put back once each odd one, through the store rather than the history', async () => {
    // Sixteen slots: one atroposNextItem answers sixteen items (4 MB), past Temporal's 2 MB payloads if they travelled inline.
    const runId = uniqueId('atropos-big');
    const out = scratch.path(`${runId}.jsonl`);
    const flags = ['--env.total_steps', '24', '--env.max_num_workers', '16', '--env.run_id', runId];
    const { code, stdout, stderr } = await runClotho(
      atroposProcess('edge_envs.py:BigItemsEnv', out, 'http://127.0.0.1:9/v1', ...flags),
      env,
    );
    expect(code, stderr).toBe(0);
    const declined = Number(/groups 24\/24 · 0 in flight · mean score 0\.500 · failed 0 · dropped (\d+) \(declined \1\)/.exec(stdout)?.[1]);
    expect(declined, stdout).toBeGreaterThan(0);
    expect(await readGroups(out)).toHaveLength(24 - declined);
    // What the env-run's history holds of the items: keys, not their text.
    const { client } = await testConnection();
    const history = await client.workflow.getHandle(`clotho/${runId}/BigItemsEnv`).fetchHistory();
    expect(JSON.stringify(history).length).toBeLessThan(500_000);
    await recordHistory('atropos-env-run-loop-stored-items.json', `clotho/${runId}/BigItemsEnv`);
    // Its first group put its item back; its second collected one that came from the store.
    await recordHistory('atropos-rollout-group-stored-item.json', `clotho/${runId}/BigItemsEnv/item-1`);
  }, 300_000);

  it('ends the run at once, saying why, when an item cannot be encoded (items holding lambdas can)', async () => {
    // closure_items_env.py's items hold a lambda, as reasoning_gym's do; --env.with_lock adds a lock nothing encodes.
    const args = (runId: string, ...flags: string[]) =>
      atroposProcess(
        'closure_items_env.py',
        scratch.path(`${runId}.jsonl`),
        'http://127.0.0.1:9/v1',
        '--env.total_steps',
        '2',
        '--env.run_id',
        runId,
        ...flags,
      );
    const kept = await runClotho(args(uniqueId('atropos-closures')), env);
    expect(kept.code).toBe(0);
    expect(kept.stdout).toContain('groups 2/2 · 0 in flight · mean score 0.000 · failed 0 · dropped 0');
    const { code, stderr } = await runClotho(args(uniqueId('atropos-lock'), '--env.with_lock', 'true'), env);
    expect(code).toBe(1);
    expect(stderr).toMatch(/clotho process: Workflow execution failed: item 0 from get_next_item cannot be encoded: item\[2\] is a lock/);
  });

  it('names a Python module the environment needs and the worker’s Python lacks, with the commands that add it', async () => {
    const args = atroposProcess('missing_module_env.py', scratch.path('missing.jsonl'), 'http://127.0.0.1:9/v1', '--env.total_steps', '1');
    const { code, stderr } = await runClotho(args, env);
    expect(code).toBe(2);
    expect(stderr).toMatch(/the environment imports the Python module 'clotho_test_missing_module' at missing_module_env\.py:\d+/);
    expect(stderr).toContain('export CLOTHO_ATROPOS_PYTHON="$LAYER/bin/python"');
    expect(stderr).not.toContain('Traceback');
  });

  it('runs an environment that scores in a process pool it forks (its children do not hang on the worker’s stdin)', async () => {
    const out = scratch.path('forked.jsonl');
    const args = atroposProcess('forked_pool_env.py', out, 'http://127.0.0.1:9/v1', '--env.total_steps', '4');
    const run = spawnClotho(args, env);
    expect(await endsWithin(run, 120_000, 'a run of 4 groups scored in a forked pool'), run.stderr()).toBe(0);
    expect((await readGroups(out)).map((g) => g.scores)).toEqual(Array.from({ length: 4 }, () => [1, -1]));
  }, 180_000);

  it('stops the Python worker, and the pool it forked, when its command is killed -9', async () => {
    const out = scratch.path('forked-killed.jsonl');
    const args = atroposProcess('forked_pool_env.py', out, 'http://127.0.0.1:9/v1', '--env.total_steps', '100000');
    const run = spawnClotho(args, env);
    let worker: number | undefined;
    try {
      await waitFor(async () => (await completeLines(out)) >= 2, 120_000, 'the first groups');
      [worker] = atroposWorkerPids(run.child.pid!);
      expect(processGroupPids(worker!).length).toBeGreaterThan(1); // the worker and its pool's processes
      run.child.kill('SIGKILL');
      await waitFor(() => processGroupPids(worker!).length === 0, 60_000, 'the Python worker and its pool to exit');
    } finally {
      if (worker !== undefined && processGroupPids(worker).length > 0) process.kill(-worker, 'SIGKILL');
      run.child.kill('SIGKILL');
    }
  }, 240_000);

  /** Starts a run of 12 arithmetic groups, two at a time, and kills -9 the command's and the Python worker's process groups mid-run. */
  async function killedMidRun(runId: string, out: string): Promise<string[]> {
    // 150 ms a call, two groups at a time: the run of 12 groups is still going when it is killed.
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder(150) }));
    const flags = ['--env.total_steps', '12', '--env.max_num_workers', '2', '--env.run_id', runId];
    const args = atroposProcess('arithmetic_env.py', out, model.baseUrl, ...flags);
    const first = spawnClotho(args, env, { processGroup: true });
    await waitFor(async () => (await completeLines(out)) >= 3, 120_000, 'the first groups');
    const python = execFileSync('ps', ['-o', 'pid=', '--ppid', String(first.child.pid)], { encoding: 'utf8' })
      .trim()
      .split(/\s+/)
      .map(Number);
    for (const pid of [first.child.pid!, ...python]) process.kill(-pid, 'SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    expect(await completeLines(out)).toBeLessThan(12);
    return args;
  }

  /** Every one of the run's 12 groups in the JSONL, each once. */
  async function expectEachGroupOnce(out: string): Promise<void> {
    const questions = (await readGroups(out)).map((g) => String(g.messages![0]![1]!.content));
    expect(questions).toHaveLength(12);
    expect(new Set(questions).size).toBe(12);
  }

  it('delivers every group exactly once when both process groups are killed -9 mid-run and the command runs again', async () => {
    const runId = uniqueId('atropos-crash');
    const out = scratch.path(`${runId}.jsonl`);
    const args = await killedMidRun(runId, out);
    const second = await runClotho(args, env);
    expect(clothoStderr(second.stderr)).toBe('');
    expect(second.code).toBe(0);
    await expectEachGroupOnce(out);
    // The resumed command names the file its run writes (not the _1 Atropos's CLI picks beside it), and ends as a
    // whole run ends: the wrote line and the HTML page.
    expect(second.stdout).toContain(`run ${runId}: 12 groups of ArithmeticEnv (Atropos) → ${out}\n`);
    const html = out.replace(/\.jsonl$/, '.html');
    expect(second.stdout).toContain(`wrote 12 groups to ${out} and ${html}`);
    expect(await readFile(html, 'utf8')).toContain('12 groups');
  });

  it('stops, naming the way on, when its JSONL is deleted mid-run; resumed with --rebuild-output it rebuilds it and finishes', async () => {
    const runId = uniqueId('atropos-deleted');
    const out = scratch.path(`${runId}.jsonl`);
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder(150) }));
    const args = atroposProcess('arithmetic_env.py', out, model.baseUrl, '--env.total_steps', '12', '--env.max_num_workers', '2');
    const first = spawnClotho([...args, '--env.run_id', runId], env);
    await waitFor(async () => (await completeLines(out)) >= 3, 120_000, 'the first groups');
    await unlink(out);
    expect(await first.exited).toBe(1);
    expect(first.stderr()).toMatch(new RegExp(`${out} has 0 lines, but the run had delivered \\d+ groups to it`));
    // The exact command that goes on, rebuilding the file from the store.
    const resume = /resume it, rebuilding the file from the trajectory store: (.*)$/m.exec(first.stderr())?.[1];
    expect(resume).toBe(`clotho ${[...args, '--env.run_id', runId, '--rebuild-output'].join(' ')}`);

    // Run again without the flag: refused before anything runs, saying how to go on.
    const refused = await runClotho([...args, '--env.run_id', runId], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`${out} has 0 groups where run ${runId} delivered [\\d to]+: it was changed or deleted`));
    expect(refused.stderr).toContain('--rebuild-output');

    const rebuilt = await runClotho(resume!.split(' ').slice(1), env);
    expect(clothoStderr(rebuilt.stderr)).toBe('');
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.stdout).toMatch(new RegExp(`rebuilt ${out}: \\d+ groups from the trajectory store`));
    await expectEachGroupOnce(out);
    // The delivery that found the file gone is retried a minute later: the test waits for it.
  }, 300_000);

  /** kill -9 of the Python worker a command started (its process group), and of nothing else. */
  function killPythonWorker(command: ReturnType<typeof spawnClotho>): void {
    const children = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(command.child.pid)], { encoding: 'utf8' });
    const python = children.split('\n').find((line) => line.includes('clotho_atropos worker'));
    if (!python) throw new Error(`no Python worker among the command's children:\n${children}`);
    process.kill(-Number(python.trim().split(/\s+/)[0]), 'SIGKILL');
  }

  it('restarts a Python worker killed -9, and past --worker-restarts exits printing the command that resumes the run', async () => {
    const runId = uniqueId('atropos-restart');
    const out = scratch.path(`${runId}.jsonl`);
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder(150) }));
    const args = atroposProcess('arithmetic_env.py', out, model.baseUrl, '--env.total_steps', '12', '--env.max_num_workers', '2');
    // No restart allowed: the command exits, and says how to go on.
    const first = spawnClotho([...args, '--worker-restarts', '0'], env);
    await waitFor(async () => (await completeLines(out)) >= 3, 120_000, 'the first groups');
    killPythonWorker(first);
    expect(await first.exited).toBe(1);
    expect(first.stderr()).toContain('the Atropos worker exited (SIGKILL) 1 time within 10 minutes');
    const resume = /resume the run with: (.*)$/m.exec(first.stderr())?.[1];
    const runOf = /^run (\S+):/m.exec(first.stdout())?.[1];
    expect(resume).toBe(`clotho ${[...args, '--worker-restarts', '0', '--env.run_id', runOf].join(' ')}`);
    expect(await completeLines(out)).toBeLessThan(12);

    // The command resumed with restarts allowed: its worker killed mid-run, it starts another and finishes the run.
    const second = spawnClotho([...args, '--env.run_id', runOf!], env);
    const before = await completeLines(out);
    await waitFor(async () => (await completeLines(out)) > before, 120_000, 'the resumed run to deliver');
    killPythonWorker(second);
    expect(await second.exited).toBe(0);
    expect(second.stderr()).toMatch(/the Atropos worker exited \(SIGKILL\): restart 1 of at most 5 within 10 minutes, in 1 s/);
    await expectEachGroupOnce(out);
  }, 300_000);

  it('finishes a killed run with clotho worker --atropos, in the run’s mode', async () => {
    const runId = uniqueId('atropos-worker');
    const out = scratch.path(`${runId}.jsonl`);
    const [, ...rest] = await killedMidRun(runId, out);
    // `process --atropos env.py <flags>` becomes `worker --atropos env.py process <flags>`.
    const worker = spawnClotho(['worker', ...rest.slice(0, 2), 'process', ...rest.slice(2)], env);
    try {
      const { client } = await testConnection();
      const result = await client.workflow.getHandle(`clotho/${runId}/arithmetic_env`).result();
      expect(result).toMatchObject({ completed: 12, delivered: 12, failed: 0 });
      expect(worker.stdout()).toContain(`workers of run ${runId} polling`);
      await expectEachGroupOnce(out);
    } finally {
      worker.child.kill('SIGTERM');
    }
    expect(await worker.exited).toBe(0);
  });
});
