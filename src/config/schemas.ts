import { z } from 'zod';
import type { EvalHandling } from '../schema/rollout.js';

/** Atropos's `EvalHandlingEnum`: what training does while `clotho serve` evaluates. */
export const EVAL_HANDLINGS = ['STOP_TRAIN', 'LIMIT_TRAIN', 'NONE'] as const satisfies readonly EvalHandling[];

/**
 * Atropos's `BaseEnvConfig` fields with their defaults (ATROPOS-API.md §3.1), plus Clotho's own
 * fields. Unknown keys are rejected: a misspelt flag is an error, not a silent default. Each field's
 * `.describe()` is its line in `--help`.
 */
export const BaseEnvConfigSchema = z.strictObject({
  group_size: z.number().int().positive().default(4).describe('rollouts per item'),
  max_num_workers: z.number().int().min(-1).default(-1).describe('concurrent rollouts (-1: per node × servers)'),
  max_eval_workers: z.number().int().positive().default(16).describe('concurrent evaluation rollouts'),
  max_num_workers_per_node: z.number().int().positive().default(8).describe('concurrent rollouts per server'),
  /** `clotho serve` evaluates whenever the trainer's step crosses a multiple of this; 0 or less: never. */
  steps_per_eval: z.number().int().default(100).describe('serve: evaluate every this many trainer steps (0: never)'),
  max_token_length: z.number().int().positive().default(2048).describe('token budget of one trajectory'),
  eval_handling: z.enum(EVAL_HANDLINGS).default('STOP_TRAIN').describe('what training does during evaluation'),
  eval_limit_ratio: z.number().min(0).max(1).default(0.5).describe('share of groups in flight kept with LIMIT_TRAIN'),
  inference_weight: z.number().default(1.0).describe('weight of this environment in mixed batches'),
  batch_size: z.number().int().default(-1).describe('trainer batch size (-1: from the API)'),
  max_batches_offpolicy: z.number().int().positive().default(3).describe('batches queued ahead before backpressure'),
  tokenizer_name: z.string().default('NousResearch/DeepHermes-3-Llama-3-3B-Preview').describe('Hugging Face tokenizer of the policy'),
  use_wandb: z.boolean().default(false).describe('log to Weights & Biases'),
  rollout_server_url: z.string().default('http://localhost:8000').describe('trajectory API URL'),
  total_steps: z.number().int().min(-1).default(1000).describe('trainer steps (-1: from the API)'),
  wandb_name: z.string().nullable().default(null).describe('name registered with the API'),
  num_rollouts_to_keep: z.number().int().default(32).describe('rollouts kept for logging'),
  num_rollouts_per_group_for_logging: z.number().int().default(1).describe('rollouts logged per group (-1: all)'),
  ensure_scores_are_not_same: z.boolean().default(true).describe('drop groups whose scores are all equal'),
  data_path_to_save_groups: z.string().nullable().default(null).describe('also write groups to this JSONL file'),
  data_dir_to_save_evals: z.string().nullable().default(null).describe('directory for evaluation results'),
  min_items_sent_before_logging: z.number().int().default(2).describe('groups sent before logging starts'),
  include_messages: z.boolean().default(false).describe('send chat messages with each group'),
  min_batch_allocation: z.number().min(0).max(1).nullable().default(null).describe('least share of each batch for this environment'),
  worker_timeout: z.number().default(600).describe('seconds a rollout group may take before it is dropped as timeout (-1 or 0: none)'),
  thinking_mode: z
    .boolean()
    .default(false)
    .describe('ask the model to reason: reasoning in every chat request, the enable_thinking template switch'),
  reasoning_effort: z
    .enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh'])
    .nullable()
    .default(null)
    .describe('reasoning effort requested from the model (turns reasoning on)'),
  max_reasoning_tokens: z
    .number()
    .int()
    .min(1024)
    .max(32000)
    .nullable()
    .default(null)
    .describe('token budget for reasoning, when no effort is given (turns reasoning on)'),
  custom_thinking_prompt: z
    .string()
    .nullable()
    .default(null)
    .describe("system prompt put first in thinking mode (before the environment's own)"),
  // Clotho's additions.
  /** Sampling temperature of training rollouts. */
  temperature: z.number().min(0).default(1.0).describe('sampling temperature of rollouts'),
  top_p: z.number().gt(0).max(1).default(1.0).describe('nucleus sampling of rollouts'),
  /** Turns of generate ↔ environment step a trajectory may take (1 = single turn). */
  max_turns: z.number().int().positive().default(1).describe('assistant turns per trajectory'),
  /** Rollout groups running at once in one env-run. */
  max_groups_in_flight: z.number().int().positive().default(32).describe('rollout groups running at once'),
  teacher_enabled: z.boolean().default(false).describe('fetch teacher top-k logprobs per group'),
  teacher_top_k: z.number().int().min(-1).default(0).describe('teacher logprobs per position (-1: off, 0: chosen token)'),
  /** Items of each evaluation during `clotho serve` (items 0 … n-1, as `clotho evaluate --items`). */
  eval_items: z.number().int().positive().default(100).describe('items of each evaluation during serve (the first n)'),
  /** Names this run: rollout workflow ids and store keys derive from it, so a re-run with the same id resumes. */
  run_id: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/)
    .nullable()
    .default(null)
    .describe('run name; the same id resumes the run'),
  /**
   * Ask the servers for messages only (no token ids, no logprobs), so that OpenAI's API and other hosted servers will
   * do: groups are written as messages-only records (`"messages_only": true`, no tokens or masks), for evaluation data
   * or SFT from a hosted model, never for RL training (`clotho serve` refuses it).
   */
  messages_only: z
    .boolean()
    .default(false)
    .describe(
      "ask servers for messages only (no token ids, no logprobs: OpenAI's API and hosted ones will do); groups are written without tokens, for evaluation or SFT data, never RL training (process only)",
    ),
});
/** Atropos's `BaseEnvConfig` fields (`--env.*`) as every environment's config has them, defaults applied. */
export type BaseEnvConfig = z.infer<typeof BaseEnvConfigSchema>;

export const SERVER_TYPES = ['openai', 'trl', 'sglang', 'vllm', 'llama'] as const;

/** Atropos's `APIServerConfig` (ATROPOS-API.md §4.1), one inference server. */
export const ServerConfigSchema = z.strictObject({
  timeout: z.number().positive().default(1200).describe('request timeout in seconds'),
  num_max_requests_at_once: z.number().int().positive().default(512).describe('concurrent training requests'),
  num_requests_for_eval: z.number().int().positive().default(64).describe('concurrent evaluation requests'),
  model_name: z.string().default('default').describe('model name sent to the server'),
  rolling_buffer_length: z.number().int().positive().default(1000).describe('requests kept for server metrics'),
  server_type: z.enum(SERVER_TYPES).default('openai').describe('kind of inference server'),
  tokenizer_name: z.string().default('none').describe('tokenizer of the served model (none: model_name)'),
  api_key: z.string().default('').describe('API key of the server'),
  base_url: z.string().default('').describe('OpenAI-compatible base URL (…/v1)'),
  n_kwarg_is_ignored: z.boolean().default(false).describe('server ignores n: send n requests'),
  health_check: z.boolean().default(true).describe('poll the server health endpoint'),
  /** Largest `n` one request may ask for; larger groups are split and merged. */
  max_n_completions: z.number().int().positive().default(8).describe('largest n of one request'),
});
export type ServerConfig = z.infer<typeof ServerConfigSchema>;

/** Retry policy and timeouts of one workflow step, in seconds (config files speak seconds). */
export const StepConfigSchema = z.strictObject({
  start_to_close_timeout: z.number().positive().describe('seconds one attempt may take'),
  heartbeat_timeout: z.number().positive().optional().describe('seconds between heartbeats before a retry'),
  initial_interval: z.number().positive().default(1).describe('seconds before the first retry'),
  backoff_coefficient: z.number().min(1).default(2).describe('growth of the retry interval'),
  maximum_interval: z.number().positive().default(60).describe('longest retry interval in seconds'),
  /** 0 = unlimited, Temporal's convention. */
  maximum_attempts: z.number().int().min(0).default(0).describe('attempts at most (0: unlimited)'),
  /**
   * Run as a local activity in the worker that runs the workflow, skipping the task-queue round trip: every step but
   * setup, teardown, judge, teacher and `deliver` by default (see steps.ts for the rule).
   */
  local: z.boolean().default(false).describe('run as a local activity in the workflow worker (no task-queue round trip)'),
});
export type StepConfig = z.infer<typeof StepConfigSchema>;
