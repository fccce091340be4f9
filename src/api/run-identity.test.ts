import { describe, expect, it } from 'vitest';
import { AXOLOTL, EXAMPLE_TRAINER, TINKER_ATROPOS } from '../../test/support/trainer-bodies.js';
import type { TrainerRegistration } from '../schema/api.js';
import { conflictMessage, decideRegistration } from './run-identity.js';

/** The batcher's view of a registered trainer: its settings, its step counter at `step`. */
const at = (registration: TrainerRegistration, step: number): TrainerRegistration => ({ ...registration, starting_step: step });

describe('what a /register means when the batcher has a trainer', () => {
  it('initialises a batcher without a trainer', () => {
    expect(decideRegistration(null, EXAMPLE_TRAINER, 0)).toEqual({ kind: 'initialise' });
  });

  it('resumes the same settings: before any batch, or from a step the batcher has reached', () => {
    expect(decideRegistration(at(EXAMPLE_TRAINER, 0), EXAMPLE_TRAINER, 0)).toEqual({ kind: 'resume' });
    expect(decideRegistration(at(AXOLOTL, 7), { ...AXOLOTL, starting_step: 5 }, 7)).toEqual({ kind: 'resume' });
    expect(decideRegistration(at(AXOLOTL, 7), { ...AXOLOTL, starting_step: 7 }, 7)).toEqual({ kind: 'resume' });
  });

  it('resumes from step 0 a trainer that took no batch, whatever batches were formed meanwhile', () => {
    // A trainer killed before its first ack comes back at step 0 while the batcher has formed batches for it.
    expect(decideRegistration(at(EXAMPLE_TRAINER, 3), EXAMPLE_TRAINER, 0)).toEqual({ kind: 'resume' });
    expect(decideRegistration(at(EXAMPLE_TRAINER, 3), EXAMPLE_TRAINER, 1)).toEqual({
      kind: 'new_run',
      why: 'starting_step 0 while the batcher is at step 3, 1 batches taken',
    });
  });

  it('starts a new run for other settings, a new wandb group, or step 0 while the batcher is further on', () => {
    const cases: [TrainerRegistration, TrainerRegistration, string][] = [
      [at(EXAMPLE_TRAINER, 3), { ...EXAMPLE_TRAINER, batch_size: 8 }, 'batch_size 4 -> 8'],
      [at(AXOLOTL, 0), { ...AXOLOTL, max_token_len: 4096, num_steps: 5 }, 'max_token_len 2048 -> 4096, num_steps 20 -> 5'],
      [at(TINKER_ATROPOS('a1b2c3'), 0), TINKER_ATROPOS('d4e5f6'), 'wandb_group "a1b2c3" -> "d4e5f6"'],
      [at(AXOLOTL, 0), { ...AXOLOTL, wandb_project: 'p' }, 'wandb_project null -> "p"'],
      [at(EXAMPLE_TRAINER, 3), EXAMPLE_TRAINER, 'starting_step 0 while the batcher is at step 3, 3 batches taken'],
    ];
    for (const [current, next, why] of cases) {
      expect(decideRegistration(current, next, current.starting_step)).toEqual({ kind: 'new_run', why });
    }
  });

  it('refuses what could be either, naming both configurations and the way to a new run', () => {
    const ahead = decideRegistration(at(AXOLOTL, 2), { ...AXOLOTL, starting_step: 9 }, 2);
    expect(ahead).toEqual({ kind: 'conflict', why: "starting_step 9 is past the batcher's step 2" });
    const moved = decideRegistration(at(AXOLOTL, 2), { ...AXOLOTL, starting_step: 2, checkpoint_dir: 'elsewhere' }, 2);
    expect(moved).toEqual({
      kind: 'conflict',
      why: 'only the checkpoint settings changed (checkpoint_dir "./outputs/out" -> "elsewhere")',
    });
    const message = conflictMessage(at(AXOLOTL, 2), { ...AXOLOTL, starting_step: 9 }, 'why');
    expect(message).toContain('"starting_step":2');
    expect(message).toContain('"starting_step":9');
    expect(message).toContain('POST /register?new_run=true');
    expect(message).toContain('--new-run');
  });
});
