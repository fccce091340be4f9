import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { arithmeticResponder, ATROPOS_ENVS, atroposPython, recordHistory } from '../support/atropos.js';
import { runClotho } from '../support/cli.js';
import { readJsonl } from '../support/groups.js';
import { startVllmServer } from '../support/native-servers.js';
import { temporalEnv, useScratch } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';

const scratch = useScratch('clotho-atropos-evaluate-');
let env: Record<string, string>;
let tokenizer: string;

beforeAll(async () => {
  const python = await atroposPython(scratch.path());
  tokenizer = python.tokenizer;
  env = { ...temporalEnv(), ...python.env };
}, 300_000);

/** `clotho evaluate --atropos <envs>/<file>` with the test tokenizer, to the end. */
async function atroposEvaluate(file: string, baseUrl: string, flags: string[], extraEnv: Record<string, string> = {}) {
  const args = ['evaluate', '--atropos', join(ATROPOS_ENVS, file), '--env.tokenizer_name', tokenizer, '--openai.base_url', baseUrl];
  const run = await runClotho([...args, '--store', scratch.path('store'), ...flags], { ...env, ...extraEnv });
  const workflowId = /as workflow (\S+)/.exec(run.stdout)?.[1];
  return { ...run, workflowId };
}

/** The metrics object the command prints (a JSON object over several lines). */
function printedMetrics(stdout: string): Record<string, unknown> {
  const json = /^\{\n[\s\S]*?^\}$/m.exec(stdout);
  expect(json, stdout).not.toBeNull();
  return JSON.parse(json![0]) as Record<string, unknown>;
}

describe('clotho evaluate --atropos', () => {
  it("runs the environment's evaluate durably, prints its metrics and writes what Atropos writes", async () => {
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder() }));
    const dir = scratch.path('arithmetic-evals');
    const run = await atroposEvaluate('arithmetic_env.py', model.baseUrl, ['--env.data_dir_to_save_evals', dir]);
    expect(run.code, run.stderr).toBe(0);
    expect(printedMetrics(run.stdout)).toEqual({ 'eval/percent_correct': 1, 'eval/items': 4 });
    expect(run.stdout).toContain(`wrote metrics.json, samples.jsonl, evaluate_config.yaml to ${dir}`);
    const metrics = JSON.parse(await readFile(join(dir, 'metrics.json'), 'utf8')) as { results: { all: unknown } };
    expect(metrics.results.all).toEqual({ 'eval/percent_correct': 1, 'eval/items': 4 });
    const samples = await readJsonl<{ question: string; correct: boolean }>(join(dir, 'samples.jsonl'));
    expect(samples.map((s) => s.correct)).toEqual([true, true, true, true]);
    // Atropos's evaluate defaults, not process's or serve's: wandb on, the flags merged over config_init.
    const config = parse(await readFile(join(dir, 'evaluate_config.yaml'), 'utf8')) as { env: Record<string, unknown> };
    expect(config.env).toMatchObject({ use_wandb: true, data_dir_to_save_evals: dir, wandb_name: 'arithmetic', group_size: 4 });
    expect(run.workflowId).toMatch(/^clotho\/.+\/arithmetic_env\/eval-0$/);
    const inspect = await runClotho(['inspect', run.workflowId!], env);
    expect(inspect.stdout).toContain('atroposEvaluate');
    await recordHistory('atropos-evaluation.json', run.workflowId!);
  });

  it('evaluates the environment that keeps checkpoints, as its base class does', async () => {
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder() }));
    const run = await atroposEvaluate('arithmetic_env.py:CheckpointedArithmeticEnv', model.baseUrl, []);
    expect(run.code, run.stderr).toBe(0);
    expect(printedMetrics(run.stdout)).toEqual({ 'eval/percent_correct': 1, 'eval/items': 4 });
    expect(run.workflowId).toMatch(/\/CheckpointedArithmeticEnv\/eval-0$/);
  });

  it('evaluates a multi-step environment through ManagedServer on a vLLM-style /generate', async () => {
    const vllm = scratch.closeAfter(await startVllmServer());
    const run = await atroposEvaluate('multistep_env.py', `${vllm.url}/v1`, ['--openai.tokenizer_name', tokenizer]);
    expect(run.code, run.stderr).toBe(0);
    const metrics = printedMetrics(run.stdout);
    // The scripted server never answers the sum: every rollout scores -1; each is two turns of exact tokens.
    expect(metrics['eval/mean_score']).toBe(-1);
    expect(metrics['eval/mean_tokens']).toBeGreaterThan(0);
    expect(vllm.requests.filter((r) => r.path === '/generate')).toHaveLength(6);
  });

  it('prints the eval_metrics pairs of an environment that writes no files, and writes none', async () => {
    const run = await atroposEvaluate('declining_env.py', 'http://127.0.0.1:9/v1', []);
    expect(run.code, run.stderr).toBe(0);
    expect(printedMetrics(run.stdout)).toEqual({ 'eval/declined_share': 0.5 });
    expect(run.stdout).not.toContain('wrote');
  });

  it('retries an evaluate that raises once, under the --steps.generate policy', async () => {
    const run = await atroposEvaluate('flaky_env.py', 'http://127.0.0.1:9/v1', ['--steps.generate.initial_interval', '0.1']);
    expect(run.code, run.stderr).toBe(0);
    expect(printedMetrics(run.stdout)).toEqual({ 'eval/attempts': 2 });
  });

  it('exits 1 with the Python traceback when evaluate keeps raising', async () => {
    const flags = ['--steps.generate.maximum_attempts', '2', '--steps.generate.initial_interval', '0.1'];
    const run = await atroposEvaluate('flaky_env.py', 'http://127.0.0.1:9/v1', flags, { FLAKY_ENV_ALWAYS_FAIL: '1' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('evaluate failed: inference server hiccup on evaluation attempt 2');
    expect(run.stderr).toMatch(/flaky_env\.py", line \d+, in evaluate/);
    const inspect = await runClotho(['inspect', run.workflowId!], env);
    expect(inspect.stdout).toContain('atroposEvaluate [attempt 2, FAILED]');
    expect(inspect.stdout).toMatch(/traceback:[\s\S]*flaky_env\.py", line \d+, in evaluate/);
    await recordHistory('atropos-evaluation-failed.json', run.workflowId!);
  });

  it("prints Atropos's evaluate help then Clotho's flags, and Atropos's error for a flag the class lacks", async () => {
    const help = await runClotho(['evaluate', '--atropos', join(ATROPOS_ENVS, 'arithmetic_env.py'), '--help'], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--env.data_dir_to_save_evals');
    expect(help.stdout).toContain('--env.dataset_size');
    // Then Clotho's own flags, which Atropos never sees.
    expect(help.stdout).toMatch(/Clotho's flags \(taken out before Atropos's CLI reads the rest\):[\s\S]*--worker-restarts <n>/);
    const bad = await atroposEvaluate('arithmetic_env.py', 'http://127.0.0.1:9/v1', ['--env.no_such_field', '1']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unrecognized arguments: --env.no_such_field');
  });
});
