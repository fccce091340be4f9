import { describe, expect, it } from 'vitest';
import { ConfigError } from '../env/config.js';
import { PROCESS_PLAN } from './commands/process.js';
import { planRun } from './run.js';

const problemsOf = async (argv: string[]) => {
  const error = await planRun(argv).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems;
};

describe('planRun: Atropos fields without a Clotho setting of their own', () => {
  it('takes over max_num_workers as groups in flight, and says so (use_wandb logs to W&B: no notice)', async () => {
    const { notices, config } = await planRun(['gsm8k', '--env.use_wandb', 'true', '--env.max_num_workers', '16', '--env.group_size', '4']);
    expect(config.env.max_groups_in_flight).toBe(16);
    expect(notices).toEqual(['--env.max_num_workers: 16 groups in flight (max_groups_in_flight)']);
    expect((await planRun(['gsm8k', '--env.max_num_workers_per_node', '3'])).config.env.max_groups_in_flight).toBe(3);
  });

  it('makes --env.tokenizer_name the policy tokenizer where --openai.tokenizer_name is unset', async () => {
    const { config } = await planRun(['gsm8k', '--env.tokenizer_name', 'Qwen/Qwen3-0.6B', '--openai.base_url', 'http://gpu:8000/v1']);
    expect(config.servers.map((s) => s.tokenizer_name)).toEqual(['Qwen/Qwen3-0.6B']);
    expect(await problemsOf(['gsm8k', '--env.tokenizer_name', 'a/b', '--openai.base_url', 'http://gpu:8000/v1', '--openai.tokenizer_name', 'c/d']))
      .toEqual(['--env.tokenizer_name a/b and --openai.tokenizer_name c/d name different tokenizers for the policy']);
    expect((await problemsOf(['gsm8k', '--env.tokenizer_name', 'a/b']))[0]).toMatch(/^--env\.tokenizer_name a\/b: the embedded engine/);
  });

  it('refuses values Clotho cannot honour, naming each flag and why', async () => {
    const problems = await problemsOf([
      'gsm8k', '--env.steps_per_eval', '20', '--env.batch_size', '12', '--env.rollout_server_url', 'http://trainer:8000',
      '--env.thinking_mode', 'true', '--env.worker_timeout', '60',
      '--env.max_num_workers', '4', '--env.max_groups_in_flight', '8',
    ]);
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      '--env.steps_per_eval 20', '--env.worker_timeout 60', '--env.thinking_mode true', '--env.rollout_server_url "http',
      '--env.batch_size 12', '--env.max_num_workers',
    ]);
    expect(problems[0]).toMatch(/does not evaluate during training yet.*clotho evaluate/);
    expect(problems[3]).toMatch(/--batcher-id/);
    expect(problems[4]).toMatch(/POST \/register/);
  });

  it("loads Atropos's defaults unchanged, and values that mean what Clotho does", async () => {
    const { notices } = await planRun([
      'gsm8k', '--env.steps_per_eval', '0', '--env.batch_size', '-1', '--env.worker_timeout', '-1', '--env.eval_handling', 'STOP_TRAIN',
      '--env.rollout_server_url', 'http://localhost:8000', '--env.tokenizer_name', 'NousResearch/DeepHermes-3-Llama-3-3B-Preview',
      '--env.include_messages', 'true', '--env.max_eval_workers', '4',
    ]);
    expect(notices).toEqual([]);
  });

  it("says nothing about a command's own defaults", async () => {
    expect((await planRun(['gsm8k'], PROCESS_PLAN)).notices).toEqual([]);
  });
});
