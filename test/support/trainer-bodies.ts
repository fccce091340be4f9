/**
 * The `POST /register` bodies the trainers Atropos names send, field for field (read from their sources; values are
 * their defaults or typical settings), so tests play what they really send.
 */

/** Atropos's `example_trainer` (`api.py`): empty wandb strings when unset, `starting_step` always 0. */
export const EXAMPLE_TRAINER = {
  wandb_group: '',
  wandb_project: '',
  batch_size: 4,
  max_token_len: 2048,
  starting_step: 0,
  checkpoint_dir: 'trained_model_checkpoints',
  save_checkpoint_interval: 3,
  num_steps: 10,
};

/** Axolotl's Atropos plugin: `wandb_group` falls back to "default", `wandb_project` is null when unset. */
export const AXOLOTL = {
  wandb_group: 'default',
  wandb_project: null,
  batch_size: 4,
  max_token_len: 2048,
  starting_step: 0,
  checkpoint_dir: './outputs/out',
  save_checkpoint_interval: 10,
  num_steps: 20,
};

/** NousResearch's tinker-atropos: a fresh random `wandb_group` per run unless configured. */
export const TINKER_ATROPOS = (wandbGroup: string) => ({
  wandb_project: 'atropos-tinker',
  wandb_group: wandbGroup,
  batch_size: 4,
  max_token_len: 2048,
  starting_step: 0,
  checkpoint_dir: './temp/',
  save_checkpoint_interval: 0,
  num_steps: 50,
});
