import type { TrainerRegistration } from '../schema/api.js';

/**
 * What a `POST /register` means when the batcher already has a trainer. Atropos's trainers expect a fresh server
 * per training run (they never call `/reset_data`), while a batcher outlives its API process; so the registration
 * itself says whether it is the same run coming back or a new one:
 *
 * - `initialise`: the batcher has no trainer (new, or after `/reset_data`): it takes these settings.
 * - `resume`: the same settings, with a `starting_step` the batcher can resume from (0 while its trainer has taken no
 *   batch, or any step up to the batcher's): state is kept, as before.
 * - `new_run`: a different `batch_size`, `max_token_len`, `num_steps`, `wandb_group` or `wandb_project`, or
 *   `starting_step` 0 once the trainer has taken batches: a fresh batcher run serves it.
 * - `conflict`: the rest, which could be either (the same settings but a `starting_step` past the batcher's, or only
 *   the checkpoint settings changed): refused, naming both configurations and how to start a new run.
 */
export type RegistrationDecision =
  { kind: 'initialise' } | { kind: 'resume' } | { kind: 'new_run'; why: string } | { kind: 'conflict'; why: string };

/** Settings that name a training run: any change is a new one. */
const IDENTITY = ['batch_size', 'max_token_len', 'num_steps', 'wandb_group', 'wandb_project'] as const;
/** Settings a resumed trainer may plausibly change, and a new run too: a change alone cannot be told apart. */
const CHECKPOINTS = ['checkpoint_dir', 'save_checkpoint_interval'] as const;

/** How to start a new run on purpose, named by every refusal. */
export const NEW_RUN_HINT = 'POST /register?new_run=true starts a new training run (so does restarting clotho api with --new-run)';

/**
 * Decides what `next` means against the batcher's trainer `current` (its `starting_step` is the batcher's step now;
 * null when no trainer is registered), which has `taken` batches for good (served without a lease, or acked). The
 * step counts batches formed, which a trainer that crashed before its first ack never trained on: from step 0 it is
 * the same run coming back until it has taken one.
 */
export function decideRegistration(current: TrainerRegistration | null, next: TrainerRegistration, taken: number): RegistrationDecision {
  if (current === null) return { kind: 'initialise' };
  const changed = (keys: readonly (keyof TrainerRegistration)[]) =>
    keys.filter((k) => current[k] !== next[k]).map((k) => `${k} ${JSON.stringify(current[k])} -> ${JSON.stringify(next[k])}`);
  const identity = changed(IDENTITY);
  if (identity.length > 0) return { kind: 'new_run', why: identity.join(', ') };
  const step = current.starting_step;
  if (next.starting_step === 0 && step > 0 && taken > 0) {
    return { kind: 'new_run', why: `starting_step 0 while the batcher is at step ${step}, ${taken} batches taken` };
  }
  if (next.starting_step > step) return { kind: 'conflict', why: `starting_step ${next.starting_step} is past the batcher's step ${step}` };
  const checkpoints = changed(CHECKPOINTS);
  if (checkpoints.length > 0) return { kind: 'conflict', why: `only the checkpoint settings changed (${checkpoints.join(', ')})` };
  return { kind: 'resume' };
}

/** The refusal of a `conflict`: both configurations, why they cannot be told apart, and how to go on. */
export function conflictMessage(current: TrainerRegistration, next: TrainerRegistration, why: string): string {
  return (
    `this registration could be the running training run resuming or a new one (${why}). ` +
    `Running: ${JSON.stringify(current)}. Registering: ${JSON.stringify(next)}. ` +
    `Register with the running settings to resume; ${NEW_RUN_HINT}.`
  );
}
