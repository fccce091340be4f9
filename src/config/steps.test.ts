import { describe, expect, it } from 'vitest';
import { StepOptionsSchema, STEP_NAMES } from '../schema/rollout.js';
import { defaultStepConfigs, toStepOption, toStepOptions } from './steps.js';

describe('defaultStepConfigs', () => {
  const table = defaultStepConfigs({ generate: 1200, teacher: 300 });

  it('gives the LLM steps the server timeout, a heartbeat and long retries', () => {
    expect(table.generate).toEqual({
      start_to_close_timeout: 1200,
      heartbeat_timeout: 10,
      initial_interval: 1,
      backoff_coefficient: 2,
      maximum_interval: 60,
      maximum_attempts: 10,
      local: true,
    });
    expect(table.teacher).toMatchObject({ start_to_close_timeout: 300, heartbeat_timeout: 10, maximum_attempts: 10 });
    // The judge follows the policy's timeout unless its own servers say otherwise.
    expect(table.judge).toMatchObject({ start_to_close_timeout: 1200, heartbeat_timeout: 10, maximum_attempts: 10 });
    expect(defaultStepConfigs({ generate: 1200, teacher: 300, judge: 90 }).judge.start_to_close_timeout).toBe(90);
  });

  it('gives tool calls, setup and teardown five minutes, a 10 s heartbeat timeout, and setup and teardown their task queue', () => {
    for (const name of ['tool', 'setup', 'teardown'] as const) {
      expect(table[name]).toEqual({
        start_to_close_timeout: 300,
        heartbeat_timeout: 10,
        initial_interval: 1,
        backoff_coefficient: 2,
        maximum_interval: 30,
        maximum_attempts: 5,
        local: name === 'tool',
      });
    }
    table.tool.maximum_attempts = 99;
    expect(table.setup.maximum_attempts).toBe(5);
  });

  it("gives an agent's episode an hour on the env queue, heartbeating", () => {
    expect(table.harness).toEqual({
      start_to_close_timeout: 3600,
      heartbeat_timeout: 10,
      initial_interval: 1,
      backoff_coefficient: 2,
      maximum_interval: 30,
      maximum_attempts: 5,
      local: false,
    });
  });

  it('gives every other step a short timeout and few attempts', () => {
    const remote = ['generate', 'teacher', 'judge', 'tool', 'harness', 'setup', 'teardown'];
    for (const name of STEP_NAMES.filter((n) => !remote.includes(n))) {
      expect(table[name]).toEqual({
        start_to_close_timeout: 60,
        initial_interval: 1,
        backoff_coefficient: 2,
        maximum_interval: 30,
        maximum_attempts: 5,
        local: name !== 'deliver',
      });
    }
  });

  it('runs an episode’s steps as local activities (generation and tool calls too), the teacher, judge and group hooks on their queues', () => {
    const defaults = defaultStepConfigs({ generate: 1, teacher: 1 });
    expect(STEP_NAMES.filter((name) => defaults[name].local)).toEqual([
      'prepare',
      'generate',
      'tool',
      'step',
      'parse',
      'score',
      'assemble',
    ]);
  });

  it('returns fresh objects, so one caller cannot change another’s defaults', () => {
    table.score.maximum_attempts = 99;
    expect(defaultStepConfigs({ generate: 1, teacher: 1 }).score.maximum_attempts).toBe(5);
    expect(table.parse.maximum_attempts).toBe(5);
  });
});

describe('toStepOptions', () => {
  it('converts seconds to whole milliseconds, keeping counts and coefficients', () => {
    expect(
      toStepOption({
        start_to_close_timeout: 1.5,
        heartbeat_timeout: 0.0004,
        initial_interval: 2,
        backoff_coefficient: 1.5,
        maximum_interval: 60,
        maximum_attempts: 0,
        local: true,
      }),
    ).toEqual({
      startToCloseTimeoutMs: 1500,
      heartbeatTimeoutMs: 1,
      initialIntervalMs: 2000,
      backoffCoefficient: 1.5,
      maximumIntervalMs: 60_000,
      maximumAttempts: 0,
      local: true,
    });
  });

  it('leaves the heartbeat out when a step has none', () => {
    expect(toStepOption(defaultStepConfigs({ generate: 1, teacher: 1 }).parse)).not.toHaveProperty('heartbeatTimeoutMs');
  });

  it('converts a whole table into valid workflow options', () => {
    const options = toStepOptions(defaultStepConfigs({ generate: 1200, teacher: 1200 }));
    expect(Object.keys(options).sort()).toEqual([...STEP_NAMES].sort());
    for (const name of STEP_NAMES) expect(StepOptionsSchema.parse(options[name])).toEqual(options[name]);
    expect(options.generate.startToCloseTimeoutMs).toBe(1_200_000);
  });
});
