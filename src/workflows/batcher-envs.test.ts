import { describe, expect, it } from 'vitest';
import type { EnvRegistration } from '../schema/api.js';
import { computeEnvStatus, disconnectEnv, registerEnv, statusEnv } from './batcher-envs.js';
import { createBatcherState, ingestGroup, registerTrainer, takeBatch, type BatcherState } from './batcher-state.js';

function started(batchSize: number, startingStep = 0): BatcherState {
  const state = createBatcherState();
  registerTrainer(state, {
    wandb_group: 'g',
    wandb_project: 'p',
    batch_size: batchSize,
    max_token_len: 2048,
    checkpoint_dir: '/ckpt',
    save_checkpoint_interval: 25,
    starting_step: startingStep,
    num_steps: 500,
  });
  takeBatch(state);
  return state;
}

const env = (overrides: Partial<EnvRegistration> = {}): EnvRegistration => ({
  max_token_length: 1000,
  desired_name: 'gsm8k',
  weight: 1,
  group_size: 4,
  min_batch_allocation: null,
  ...overrides,
});

let n = 0;
const queue = (state: BatcherState, envId: number | null, ...sizes: number[]) => {
  for (const size of sizes) ingestGroup(state, { id: `g${n++}`, ref: 'r', envId, size });
};

describe('registerEnv', () => {
  it('gives a run that registers again (a restarted clotho serve) its env id back, and one env in /status-env', () => {
    const state = started(8);
    const first = registerEnv(state, env({ run_key: 'clotho/run-a/gsm8k' }), 1);
    registerEnv(state, env({ desired_name: 'other' }), 2);
    disconnectEnv(state, 0);
    const again = registerEnv(state, env({ run_key: 'clotho/run-a/gsm8k' }), 3);
    expect(again).toEqual(first);
    expect(again).toMatchObject({ status: 'success', env_id: 0, wandb_name: 'gsm8k_0' });
    expect(state.envs.map((e) => [e.registered_id, e.connected, e.last_update])).toEqual([
      [0, true, 3],
      [1, true, 2],
    ]);
    // Another run of the same environment is a second registration, as in Atropos.
    expect(registerEnv(state, env({ run_key: 'clotho/run-b/gsm8k' }), 4)).toMatchObject({ env_id: 2, wandb_name: 'gsm8k_1' });
  });

  it('asks envs to wait until the trainer asks for its first batch', () => {
    const state = createBatcherState();
    expect(registerEnv(state, env(), 0)).toEqual({ status: 'wait for trainer to start' });
    registerTrainer(state, {
      wandb_group: 'g',
      wandb_project: 'p',
      batch_size: 4,
      max_token_len: 1,
      checkpoint_dir: '',
      save_checkpoint_interval: 1,
      starting_step: 0,
      num_steps: 1,
    });
    expect(registerEnv(state, env(), 0)).toEqual({ status: 'wait for trainer to start' });
    expect(state.envs).toEqual([]);
  });

  it('records the env and answers with its id, numbered wandb name and the trainer settings', () => {
    const state = started(4, 12);
    expect(registerEnv(state, env(), 111)).toEqual({
      status: 'success',
      env_id: 0,
      wandb_name: 'gsm8k_0',
      checkpoint_dir: '/ckpt',
      starting_step: 12,
      checkpoint_interval: 25,
      num_steps: 500,
    });
    registerEnv(state, env({ desired_name: 'other' }), 222);
    expect(registerEnv(state, env({ min_batch_allocation: 0.5, weight: 2 }), 333)).toMatchObject({ env_id: 2, wandb_name: 'gsm8k_1' });
    expect(state.envs[2]).toEqual({
      max_context_len: 1000,
      weight: 2,
      desired_name: 'gsm8k',
      real_name: 'gsm8k_1',
      registered_id: 2,
      last_update: 333,
      connected: true,
      min_batch_allocation: 0.5,
      group_size: 4,
    });
  });
});

describe('disconnectEnv', () => {
  it('marks a known env disconnected and fails for unknown ids', () => {
    const state = started(4);
    registerEnv(state, env(), 0);
    expect(disconnectEnv(state, 0)).toEqual({ status: 'success' });
    expect(state.envs[0]?.connected).toBe(false);
    expect(disconnectEnv(state, 1)).toEqual({ status: 'failure', error: 'list index out of range' });
    expect(disconnectEnv(state, -1)).toMatchObject({ status: 'failure' });
  });
});

describe('status-env', () => {
  it('computes queue share, weight and unallocated fraction as Atropos does', () => {
    const state = started(32, 5);
    registerEnv(state, env({ group_size: 4 }), 0);
    registerEnv(state, env({ max_token_length: 3000, group_size: 8, min_batch_allocation: 0.25 }), 0);
    registerEnv(state, env({ weight: -1, group_size: 2 }), 0);
    queue(state, 0, 4, 4);
    queue(state, 1, 8, 8, 8);
    queue(state, null, 2);
    // weighted context: 1000 + 3000 + 0 (negative weight counts as 0); own 8 sequences;
    // env 1: 24 → 24 packed − 8 reserved = 16; no env: 2 → 8 packed; (8 + 24) // 4 = 8.
    expect(statusEnv(state, 0)).toEqual({
      current_step: 5,
      queue_size: 8,
      unallocated_fraction: 0.75,
      self_queue_size: 2,
      max_group_size: 8,
      env_weight: 0.25,
    });
    expect(statusEnv(state, 2)?.env_weight).toBe(0.01);
    expect(statusEnv(state, 3)).toBeNull();
  });

  it('records a larger observed group size on the env, only when asked to', () => {
    const state = started(8);
    registerEnv(state, env({ group_size: 4 }), 0);
    queue(state, 0, 8);
    expect(computeEnvStatus(state, 0)).toMatchObject({ groupSize: 8, status: { self_queue_size: 1 } });
    expect(state.envs[0]?.group_size).toBe(4);
    statusEnv(state, 0);
    expect(state.envs[0]?.group_size).toBe(8);
    // From now on groups of 4 are buffered until two add up to the observed size.
    queue(state, 0, 4);
    expect(state.buffers['0']).toHaveLength(1);
  });

  it("counts other envs' groups also when every group has size 1 (Atropos bug)", () => {
    const state = started(4);
    registerEnv(state, env({ group_size: 1 }), 0);
    registerEnv(state, env({ group_size: 1 }), 0);
    queue(state, 0, 1, 1);
    queue(state, 1, 1, 1, 1);
    // Atropos skips other envs when the largest group has size 1 and answers queue_size 2.
    expect(statusEnv(state, 0)).toMatchObject({ queue_size: 5, self_queue_size: 2, max_group_size: 1 });
  });

  it('gives the minimum weight instead of dividing by zero when no connected env has weight', () => {
    const state = started(4);
    registerEnv(state, env(), 0);
    disconnectEnv(state, 0);
    expect(statusEnv(state, 0)).toMatchObject({ env_weight: 0.01, unallocated_fraction: 1 });
  });
});
