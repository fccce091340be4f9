import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toy } from '../../test/support/environments.js';
import { ConfigError } from './config-error.js';
import { resolveConfig } from './resolve.js';

const dir = mkdtempSync(join(tmpdir(), 'clotho-config-'));
let files = 0;
const yamlFile = (text: string): string => {
  const path = join(dir, `c${files++}.yaml`);
  writeFileSync(path, text);
  return path;
};

const resolve = (argv: string[]) => resolveConfig({ argv, environment: toy });
const problemsOf = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
};

describe('resolveConfig', () => {
  it('layers schema defaults, environment defaults and its own fields with no flags', () => {
    const { env, servers, teacher, steps, rest } = resolve([]);
    expect(env.group_size).toBe(8);
    expect(env.max_token_length).toBe(1024);
    expect(env.steps_per_eval).toBe(100);
    expect(env.split).toBe('train');
    expect(env.data_path).toBeNull();
    expect(servers).toHaveLength(1);
    expect(servers[0]!.timeout).toBe(1200);
    expect(teacher).toEqual([]);
    expect(steps.generate).toMatchObject({ startToCloseTimeoutMs: 1_200_000, heartbeatTimeoutMs: 10_000, maximumAttempts: 10 });
    expect(steps.score).toMatchObject({ startToCloseTimeoutMs: 60_000, maximumAttempts: 5 });
    expect(rest).toEqual({ args: [], flags: {} });
  });

  it('reads every flag form and coerces by the field type', () => {
    const { env, rest } = resolve([
      '--env.group_size=16',
      '--env.max_token_length',
      '512',
      '--env.use_wandb',
      '--env.ensure_scores_are_not_same',
      'false',
      '--env.wandb_name',
      'run-a',
      '--env.data_path=None',
      '--env.split',
      'test',
      '--env.temperature=0.7',
      '--env.eval_handling',
      'NONE',
    ]);
    expect(env).toMatchObject({
      group_size: 16,
      max_token_length: 512,
      use_wandb: true,
      ensure_scores_are_not_same: false,
      wandb_name: 'run-a',
      data_path: null,
      split: 'test',
      temperature: 0.7,
      eval_handling: 'NONE',
    });
    expect(rest.args).toEqual([]);
  });

  it('lets a bare boolean flag leave the next positional alone, and `--` end the flags', () => {
    const { env, rest } = resolve(['--env.use_wandb', 'gsm8k', '--env.include_messages', 'true', '--', '--env.group_size', '3']);
    expect(env.use_wandb).toBe(true);
    expect(env.include_messages).toBe(true);
    expect(env.group_size).toBe(8);
    expect(rest.args).toEqual(['gsm8k', '--env.group_size', '3']);
  });

  it('ranks CLI over YAML over environment defaults over schema defaults', () => {
    const config = yamlFile(
      'env:\n  group_size: 12\n  temperature: 0.5\n  max_token_length: 2000\nopenai:\n  base_url: http://a/v1\n  timeout: 30\n',
    );
    const { env, servers, steps } = resolve(['--config', config, '--env.group_size', '16', '--openai.model_name', 'm']);
    expect(env).toMatchObject({ group_size: 16, temperature: 0.5, max_token_length: 2000, total_steps: 1000 });
    expect(servers).toEqual([expect.objectContaining({ base_url: 'http://a/v1', timeout: 30, model_name: 'm', max_n_completions: 8 })]);
    expect(steps.generate.startToCloseTimeoutMs).toBe(30_000);
  });

  it('takes a list of servers from YAML, merging flags into a single one', () => {
    const one = yamlFile('openai:\n  - base_url: http://a/v1\n');
    expect(resolve(['--config', one, '--openai.api_key', 'k']).servers).toEqual([
      expect.objectContaining({ base_url: 'http://a/v1', api_key: 'k' }),
    ]);
    const two = yamlFile('openai:\n  - base_url: http://a/v1\n  - base_url: http://b/v1\n    timeout: 90\n');
    const { servers, steps } = resolve(['--config', two]);
    expect(servers.map((s) => s.base_url)).toEqual(['http://a/v1', 'http://b/v1']);
    expect(steps.generate.startToCloseTimeoutMs).toBe(1_200_000);
    expect(problemsOf(() => resolve(['--config', two, '--openai.timeout', '5']))).toEqual([
      '--openai.timeout: cannot override a list of 2 openai servers from the YAML file; edit the file',
    ]);
  });

  it('configures teacher servers only when asked, and times the teacher step by them', () => {
    const { teacher, steps } = resolve(['--teacher.base_url', 'http://t/v1', '--teacher.timeout', '45']);
    expect(teacher).toEqual([expect.objectContaining({ base_url: 'http://t/v1', timeout: 45 })]);
    expect(steps.teacher.startToCloseTimeoutMs).toBe(45_000);
    expect(steps.generate.startToCloseTimeoutMs).toBe(1_200_000);
  });

  it('configures a judge like the teacher, from flags or a YAML judge: block', () => {
    expect(resolve([]).judge).toEqual([]);
    expect(resolve(['--judge.base_url', 'http://j/v1', '--judge.model_name', 'judge']).judge).toEqual([
      expect.objectContaining({ base_url: 'http://j/v1', model_name: 'judge' }),
    ]);
    // A server section named like a step (judge, teacher) is not that step's retry policy.
    const config = yamlFile('judge:\n  base_url: http://y/v1\n  server_type: vllm\nteacher:\n  base_url: http://t/v1\n');
    const resolved = resolve(['--config', config]);
    expect(resolved.judge).toEqual([expect.objectContaining({ base_url: 'http://y/v1', server_type: 'vllm' })]);
    expect(resolved.teacher).toEqual([expect.objectContaining({ base_url: 'http://t/v1' })]);
    expect(problemsOf(() => resolve(['--judge.base_ulr', 'x']))).toEqual([
      'unknown flag --judge.base_ulr (did you mean --judge.base_url?)',
    ]);
  });

  it('gives tool calls, setup and teardown their own retry policy, setup and teardown on the env queue (--steps.tool.*)', () => {
    const { steps } = resolve(['--steps.tool.maximum_attempts', '3', '--steps.tool.heartbeat_timeout', '5']);
    expect(steps.tool).toMatchObject({ startToCloseTimeoutMs: 300_000, heartbeatTimeoutMs: 5000, maximumAttempts: 3, local: true });
    expect(resolve(['--steps.tool.local', 'false']).steps.tool.local).toBe(false);
    expect(steps.setup).toMatchObject({ startToCloseTimeoutMs: 300_000, maximumAttempts: 5, local: false });
    expect(steps.teardown).toMatchObject({ local: false });
  });

  it('overrides single step fields from flags and YAML, keeping the rest of that step', () => {
    const config = yamlFile('steps:\n  score:\n    start_to_close_timeout: 5\n');
    const { steps } = resolve(['--config', config, '--steps.generate.maximum_attempts', '3', '--openai.timeout', '300']);
    expect(steps.generate).toEqual({
      startToCloseTimeoutMs: 300_000,
      heartbeatTimeoutMs: 10_000,
      initialIntervalMs: 1000,
      backoffCoefficient: 2,
      maximumIntervalMs: 60_000,
      maximumAttempts: 3,
      local: true,
    });
    expect(resolve(['--steps.generate.local', 'false']).steps.generate.local).toBe(false);
    expect(steps.score).toMatchObject({ startToCloseTimeoutMs: 5000, maximumAttempts: 5, local: true });
  });

  it('refuses deliveries as local activities, which replay could reorder beside launches', () => {
    expect(problemsOf(() => resolve(['--steps.deliver.local', 'true']))).toEqual([
      '--steps.deliver.local: deliveries cannot run as local activities (they run beside launches, and replay must keep their order)',
    ]);
    expect(resolve(['--steps.deliver.local', 'false']).steps.deliver.local).toBe(false);
  });

  it('reports every problem at once, naming the flag and what it expected', () => {
    const problems = problemsOf(() =>
      resolve([
        '--env.group_size',
        'x',
        '--env.grup_size',
        '3',
        '--openai.timeout=-1',
        '--steps.genrate.maximum_attempts',
        '2',
        '--env.split',
        'dev',
        '--env.max_token_length',
        '--env.min_batch_allocation',
        '2',
        '--env.top_p',
        'None',
        '--env.use_wandb=yes',
        '--bogus',
      ]),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'unknown flag --env.grup_size (did you mean --env.group_size?)',
        'unknown flag --steps.genrate.maximum_attempts (did you mean --steps.generate.maximum_attempts?)',
        'unknown flag --bogus',
        '--env.group_size: expected a positive integer, got "x"',
        '--env.split: expected one of train, test, got "dev"',
        '--env.max_token_length: expected a positive integer, got no value',
        '--env.min_batch_allocation: expected a number between 0 and 1 or None, got "2"',
        '--env.top_p: expected a number > 0 and <= 1, got None',
        '--env.use_wandb: expected true or false, got "yes"',
        '--openai.timeout: expected a positive number, got "-1"',
      ]),
    );
    expect(problems).toHaveLength(10);
  });

  it('suggests the namespaced flag for a bare field name', () => {
    expect(problemsOf(() => resolve(['--group_size', '3']))).toEqual(['unknown flag --group_size (did you mean --env.group_size?)']);
    expect(problemsOf(() => resolve(['--env.group_size.x', '3', '--env.constructor', '--steps.generate']))).toEqual([
      'unknown flag --env.group_size.x (did you mean --env.group_size?)',
      'unknown flag --env.constructor',
      'unknown flag --steps.generate',
    ]);
  });

  it('names the YAML path of bad and unknown keys', () => {
    const config = yamlFile(
      'env:\n  group_size: 0\n  temprature: 1\nopenai:\n  - timeout: fast\nsteps:\n  scor: {}\n  parse:\n    maximum_attempts: -2\nslurm: true\n',
    );
    expect(problemsOf(() => resolve(['--config', config])).sort()).toEqual(
      [
        `${config}: env.group_size: expected a positive integer, got 0`,
        `${config}: env.temprature: unknown key (did you mean temperature?)`,
        `${config}: openai[0].timeout: expected a positive number, got "fast"`,
        `${config}: slurm: unknown section`,
        `${config}: steps.parse.maximum_attempts: expected a non-negative integer, got -2`,
        `${config}: steps.scor: unknown step (did you mean score?)`,
      ].sort(),
    );
  });

  it('reads an empty YAML section as no settings', () => {
    const { env, servers, teacher } = resolve(['--config', yamlFile('env:\nopenai:\nteacher:\nsteps:\n')]);
    expect(env.group_size).toBe(8);
    expect(servers).toHaveLength(1);
    expect(teacher).toEqual([]);
  });

  it('reports a missing or malformed YAML file', () => {
    expect(problemsOf(() => resolve(['--config', join(dir, 'absent.yaml')]))[0]).toMatch(/^--config .*absent\.yaml: ENOENT/);
    const malformed = problemsOf(() =>
      resolve(['--config', yamlFile('env:\n  group_size: 4\n  max_token_length: [1, 2\nopenai:\n  base_url: x\n')]),
    );
    expect(malformed).toHaveLength(1);
    // What is wrong, the line and column, and the offending line itself.
    expect(malformed[0]).toMatch(/^--config .*: Flow sequence in block collection .* at line 4, column 1:\n {4}4 \| openai:\n {6}\| \^$/);
    expect(problemsOf(() => resolve(['--config']))).toEqual(['--config: expected a path to a YAML file']);
  });

  it('parses the command’s own flags and rejects undeclared ones', () => {
    const commandFlags = { 'max-groups': z.number().int().positive().optional(), 'temporal-address': z.string().default('localhost:7233') };
    const { rest } = resolveConfig({ argv: ['serve', '--max-groups', '5', 'extra'], environment: toy, commandFlags });
    expect(rest).toEqual({ args: ['serve', 'extra'], flags: { 'max-groups': 5, 'temporal-address': 'localhost:7233' } });
    expect(problemsOf(() => resolveConfig({ argv: ['--max-group', '5', '--max-groups', 'z'], environment: toy, commandFlags }))).toEqual([
      'unknown flag --max-group (did you mean --max-groups?)',
      '--max-groups: expected a positive integer, got "z"',
    ]);
  });
});
