import { describe, expect, it } from 'vitest';
import { registerEnv } from './batcher-envs.js';
import { roomOf } from './batcher-room.js';
import { createBatcherState, registerTrainer } from './batcher-state.js';

const env = (name: string, weight: number, extra: { min_batch_allocation?: number; max_token_length?: number } = {}) => ({
  max_token_length: 1024,
  desired_name: name,
  weight,
  group_size: 2,
  min_batch_allocation: null,
  ...extra,
});

function started() {
  const state = createBatcherState();
  registerTrainer(state, {
    batch_size: 8,
    max_token_len: 2048,
    checkpoint_dir: '',
    save_checkpoint_interval: -1,
    starting_step: 0,
    num_steps: 10,
    wandb_group: '',
    wandb_project: '',
  });
  // The trainer's first GET /batch starts it (Atropos lets envs register only then).
  state.started = true;
  return state;
}

describe('roomOf: the room the batcher pushes to an env-run', () => {
  it("carries each env's weighted share (Atropos's env_weight), which changes when another env registers", () => {
    const state = started();
    registerEnv(state, env('a', 2), 0);
    expect(roomOf(state, 0)?.share).toBe(1);
    registerEnv(state, env('b', 1), 0);
    expect(roomOf(state, 0)?.share).toBeCloseTo(2 / 3);
    expect(roomOf(state, 1)?.share).toBeCloseTo(1 / 3);
    // Weighted by max token length too, as Atropos weighs them.
    registerEnv(state, env('c', 1, { max_token_length: 3072 }), 0);
    expect(roomOf(state, 2)?.share).toBeCloseTo(3 / 6);
  });

  it('gives the whole room to an env without a positive weight, and at least its minimum allocation', () => {
    const state = started();
    registerEnv(state, env('a', 9), 0);
    registerEnv(state, env('b', 1, { min_batch_allocation: 0.5 }), 0);
    registerEnv(state, env('c', -1), 0);
    expect(roomOf(state, 1)?.share).toBe(0.5);
    expect(roomOf(state, 2)).not.toHaveProperty('share');
    expect(roomOf(state, 7)).toBeUndefined();
  });
});
