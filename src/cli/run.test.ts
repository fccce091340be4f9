import { describe, expect, it } from 'vitest';
import { planProblems } from '../../test/support/plans.js';
import { PROCESS_PLAN } from './commands/process.js';
import { evalSchedule, processEvalNotices } from './eval-schedule.js';
import { envRunSettings, planRun } from './run.js';

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
    expect(
      await planProblems([
        'gsm8k',
        '--env.tokenizer_name',
        'a/b',
        '--openai.base_url',
        'http://gpu:8000/v1',
        '--openai.tokenizer_name',
        'c/d',
      ]),
    ).toEqual(['--env.tokenizer_name a/b and --openai.tokenizer_name c/d name different tokenizers for the policy']);
    expect((await planProblems(['gsm8k', '--env.tokenizer_name', 'a/b']))[0]).toMatch(/^--env\.tokenizer_name a\/b: the embedded engine/);
  });

  it('refuses values Clotho cannot honour, naming each flag and why', async () => {
    const problems = await planProblems([
      'gsm8k',
      '--env.batch_size',
      '12',
      '--env.rollout_server_url',
      'http://trainer:8000',
      '--env.max_num_workers',
      '4',
      '--env.max_groups_in_flight',
      '8',
    ]);
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      '--env.rollout_server_url "http',
      '--env.batch_size 12',
      '--env.max_num_workers',
    ]);
    expect(problems[0]).toMatch(/--batcher-id/);
    expect(problems[1]).toMatch(/POST \/register/);
  });

  it("turns the evaluation fields into the env-run's evaluation schedule for serve, and says process ignores them", async () => {
    const plan = await planRun([
      'gsm8k',
      '--env.steps_per_eval',
      '20',
      '--env.eval_handling',
      'LIMIT_TRAIN',
      '--env.eval_limit_ratio',
      '0.25',
      '--env.eval_items',
      '7',
      '--env.max_eval_workers',
      '3',
      '--env.run_id',
      'r1',
    ]);
    expect(plan.notices).toEqual([]);
    expect(evalSchedule(plan)).toMatchObject({
      everySteps: 20,
      handling: 'LIMIT_TRAIN',
      limitRatio: 0.25,
      run: {
        runId: 'r1',
        environment: 'gsm8k',
        items: 7,
        concurrency: 3,
        maxTurns: 1,
        taskQueue: 'clotho-llm@r1/gsm8k',
        activity: { local: false },
      },
    });
    expect(evalSchedule(await planRun(['gsm8k', '--env.steps_per_eval', '0']))).toBeUndefined();
    expect(processEvalNotices(plan)[0]).toMatch(
      /^--env\.steps_per_eval, --env\.eval_handling, --env\.eval_limit_ratio, --env\.eval_items: no effect in `clotho process`/,
    );
    expect(processEvalNotices(await planRun(['gsm8k']))).toEqual([]);
    expect(await planProblems(['gsm8k', '--env.eval_limit_ratio', '1.5'])).toEqual([expect.stringMatching(/^--env\.eval_limit_ratio: /)]);
  });

  it('puts the thinking fields and worker_timeout into the env-run input', async () => {
    const plan = await planRun([
      'gsm8k',
      '--env.thinking_mode',
      'true',
      '--env.reasoning_effort',
      'high',
      '--env.max_reasoning_tokens',
      '2048',
      '--env.custom_thinking_prompt',
      'Think first.',
      '--env.worker_timeout',
      '60',
    ]);
    expect(plan.notices).toEqual([]);
    const settings = envRunSettings(plan, false);
    expect(settings.group.sampling).toEqual({ temperature: 1, topP: 1, reasoning: { effort: 'high', maxTokens: 2048 } });
    expect(settings.groupTimeoutSeconds).toBe(60);
    // A token budget alone turns reasoning on, as Atropos's ReasoningConfig does.
    expect(envRunSettings(await planRun(['gsm8k', '--env.max_reasoning_tokens', '4096']), false).group.sampling.reasoning).toEqual({
      maxTokens: 4096,
    });
  });

  it("leaves reasoning out by default, and no deadline when worker_timeout is -1; Atropos's 600 s otherwise", async () => {
    const defaults = envRunSettings(await planRun(['gsm8k']), false);
    expect(defaults.group.sampling).toEqual({ temperature: 1, topP: 1 });
    expect(defaults.groupTimeoutSeconds).toBe(600);
    expect('groupTimeoutSeconds' in envRunSettings(await planRun(['gsm8k', '--env.worker_timeout', '-1']), false)).toBe(false);
  });

  it('says a thinking prompt outside thinking mode is not used', async () => {
    expect((await planRun(['gsm8k', '--env.custom_thinking_prompt', 'Think.'])).notices).toEqual([
      '--env.custom_thinking_prompt is not used: it is the system prompt of thinking mode (--env.thinking_mode true)',
    ]);
  });

  it("loads Atropos's defaults unchanged, and values that mean what Clotho does", async () => {
    const { notices } = await planRun([
      'gsm8k',
      '--env.steps_per_eval',
      '0',
      '--env.batch_size',
      '-1',
      '--env.worker_timeout',
      '-1',
      '--env.eval_handling',
      'STOP_TRAIN',
      '--env.rollout_server_url',
      'http://localhost:8000',
      '--env.tokenizer_name',
      'NousResearch/DeepHermes-3-Llama-3-3B-Preview',
      '--env.include_messages',
      'true',
      '--env.max_eval_workers',
      '4',
    ]);
    expect(notices).toEqual([]);
  });

  it("says nothing about a command's own defaults", async () => {
    expect((await planRun(['gsm8k'], PROCESS_PLAN)).notices).toEqual([]);
  });
});

describe('planRun: settings each allowed alone that contradict each other', () => {
  it('refuses teacher logprobs in a messages-only run or without a teacher server, with every other problem', async () => {
    expect(await planProblems(['gsm8k', '--env.teacher_enabled', '--env.messages_only', '--env.batch_size', '12'])).toEqual([
      expect.stringMatching(/^--env\.batch_size 12: /),
      '--env.teacher_enabled: a messages-only run (--env.messages_only) has no tokens for teacher logprobs',
      '--teacher.base_url: --env.teacher_enabled needs a teacher server',
    ]);
    const plan = await planRun(['gsm8k', '--env.teacher_enabled', '--teacher.base_url', 'http://teacher:8000/v1']);
    expect(plan.config.teacher.map((s) => s.base_url)).toEqual(['http://teacher:8000/v1']);
  });
});
