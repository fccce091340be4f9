import { z } from 'zod';

/**
 * Atropos's `BaseEnvConfig` fields with their defaults (ATROPOS-API.md §3.1), plus Clotho's own
 * fields. Unknown keys are rejected: a misspelt flag is an error, not a silent default.
 */
export const BaseEnvConfigSchema = z.strictObject({
  group_size: z.number().int().positive().default(4),
  max_num_workers: z.number().int().min(-1).default(-1),
  max_eval_workers: z.number().int().positive().default(16),
  max_num_workers_per_node: z.number().int().positive().default(8),
  steps_per_eval: z.number().int().positive().default(100),
  max_token_length: z.number().int().positive().default(2048),
  eval_handling: z.enum(['STOP_TRAIN', 'LIMIT_TRAIN', 'NONE']).default('STOP_TRAIN'),
  eval_limit_ratio: z.number().min(0).max(1).default(0.5),
  inference_weight: z.number().default(1.0),
  batch_size: z.number().int().default(-1),
  max_batches_offpolicy: z.number().int().positive().default(3),
  tokenizer_name: z.string().default('NousResearch/DeepHermes-3-Llama-3-3B-Preview'),
  use_wandb: z.boolean().default(false),
  rollout_server_url: z.string().default('http://localhost:8000'),
  total_steps: z.number().int().min(-1).default(1000),
  wandb_name: z.string().nullable().default(null),
  num_rollouts_to_keep: z.number().int().default(32),
  num_rollouts_per_group_for_logging: z.number().int().default(1),
  ensure_scores_are_not_same: z.boolean().default(true),
  data_path_to_save_groups: z.string().nullable().default(null),
  data_dir_to_save_evals: z.string().nullable().default(null),
  min_items_sent_before_logging: z.number().int().default(2),
  include_messages: z.boolean().default(false),
  min_batch_allocation: z.number().min(0).max(1).nullable().default(null),
  worker_timeout: z.number().default(600),
  thinking_mode: z.boolean().default(false),
  reasoning_effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).nullable().default(null),
  max_reasoning_tokens: z.number().int().min(1024).max(32000).nullable().default(null),
  custom_thinking_prompt: z.string().nullable().default(null),
  // Clotho's additions.
  /** Sampling temperature of training rollouts. */
  temperature: z.number().min(0).default(1.0),
  top_p: z.number().gt(0).max(1).default(1.0),
  /** Turns of generate ↔ environment step a trajectory may take (1 = single turn). */
  max_turns: z.number().int().positive().default(1),
  /** Rollout groups running at once in one env-run. */
  max_groups_in_flight: z.number().int().positive().default(32),
  teacher_enabled: z.boolean().default(false),
  teacher_top_k: z.number().int().min(-1).default(0),
  /** Names this run: rollout workflow ids and store keys derive from it, so a re-run with the same id resumes. */
  run_id: z.string().regex(/^[A-Za-z0-9._-]+$/).nullable().default(null),
});
export type BaseEnvConfig = z.infer<typeof BaseEnvConfigSchema>;

/**
 * Atropos fields Clotho accepts, so that Atropos configs load unchanged, but does not act on: their work is done
 * another way (the trajectory store and Temporal UI instead of wandb, max_groups_in_flight instead of worker
 * counts) or not at all yet. Setting one is reported, never silently ignored.
 */
export const INERT_ATROPOS_FIELDS = [
  'max_num_workers', 'max_eval_workers', 'max_num_workers_per_node', 'steps_per_eval', 'eval_handling', 'eval_limit_ratio',
  'use_wandb', 'num_rollouts_to_keep', 'num_rollouts_per_group_for_logging', 'min_items_sent_before_logging',
  'include_messages', 'worker_timeout', 'thinking_mode', 'reasoning_effort', 'max_reasoning_tokens',
  'custom_thinking_prompt', 'tokenizer_name', 'rollout_server_url', 'batch_size',
] as const satisfies readonly (keyof BaseEnvConfig)[];

export const SERVER_TYPES = ['openai', 'trl', 'sglang', 'vllm', 'llama'] as const;

/** Atropos's `APIServerConfig` (ATROPOS-API.md §4.1), one inference server. */
export const ServerConfigSchema = z.strictObject({
  timeout: z.number().positive().default(1200),
  num_max_requests_at_once: z.number().int().positive().default(512),
  num_requests_for_eval: z.number().int().positive().default(64),
  model_name: z.string().default('default'),
  rolling_buffer_length: z.number().int().positive().default(1000),
  server_type: z.enum(SERVER_TYPES).default('openai'),
  tokenizer_name: z.string().default('none'),
  api_key: z.string().default(''),
  base_url: z.string().default(''),
  n_kwarg_is_ignored: z.boolean().default(false),
  health_check: z.boolean().default(true),
  /** Largest `n` one request may ask for; larger groups are split and merged. */
  max_n_completions: z.number().int().positive().default(8),
});
export type ServerConfig = z.infer<typeof ServerConfigSchema>;

/** Retry policy and timeouts of one workflow step, in seconds (config files speak seconds). */
export const StepConfigSchema = z.strictObject({
  start_to_close_timeout: z.number().positive(),
  heartbeat_timeout: z.number().positive().optional(),
  initial_interval: z.number().positive().default(1),
  backoff_coefficient: z.number().min(1).default(2),
  maximum_interval: z.number().positive().default(60),
  /** 0 = unlimited, Temporal's convention. */
  maximum_attempts: z.number().int().min(0).default(0),
  /**
   * Run as a local activity in the worker that runs the workflow, skipping the task-queue round trip: for
   * cheap steps (prepare, parse, score, assemble, deliver). Heavy or remote work keeps its own task queue.
   */
  local: z.boolean().default(false),
});
export type StepConfig = z.infer<typeof StepConfigSchema>;
