import { ConfigError } from './config-error.js';
import type { BaseEnvConfig, ServerConfig } from './schemas.js';

/**
 * Atropos fields Clotho cannot honour yet, or that mean nothing here, with the values it does honour (Atropos's
 * default always among them, so an Atropos config loads unchanged) and why any other value is an error.
 * `max_eval_workers` (`clotho evaluate`'s concurrency), the evaluation fields (`steps_per_eval`, `eval_handling`,
 * `eval_limit_ratio`: evaluation during `clotho serve`), `include_messages` (Clotho's groups always carry their
 * messages), `worker_timeout` (a deadline on each rollout group) and the thinking fields (`thinking_mode`,
 * `reasoning_effort`, `max_reasoning_tokens`, `custom_thinking_prompt`: see `env/thinking.ts`) do what they do in
 * Atropos and are not listed; nor are those {@link atroposFields} maps.
 */
const UNSUPPORTED: Partial<Record<keyof BaseEnvConfig, { accepts: (value: unknown) => boolean; why: string }>> = {
  rollout_server_url: {
    accepts: (v) => v === 'http://localhost:8000',
    why: 'environments do not post groups over HTTP here: `clotho serve --batcher-id <id>` signals the batcher behind `clotho api --batcher-id <id>` through Temporal (both default to the same id)',
  },
  batch_size: {
    accepts: (v) => v === -1,
    why: "the trainer's batch size (POST /register) applies to every environment; Atropos too overwrites this field from /info",
  },
};

/** What {@link atroposFields} decided. */
interface AtroposFields {
  /** One line per field set to a value Clotho cannot honour, naming the flag and why. */
  problems: string[];
  /** Lines to print: a setting taken over from an Atropos field, or one accepted and not acted on. */
  notices: string[];
  /** Groups in flight from `max_num_workers` (or `max_num_workers_per_node` × servers), when one is set. */
  maxGroupsInFlight?: number;
  /** The policy servers, `tokenizer_name` filled in from `--env.tokenizer_name` where it was "none". */
  servers: ServerConfig[];
}

const ATROPOS_TOKENIZER = 'NousResearch/DeepHermes-3-Llama-3-3B-Preview';

/**
 * Applies the Atropos fields that map onto Clotho settings and checks the rest (docs/reference/atropos-compatibility.md).
 * A field counts as set when it differs from `defaults` (the environment's and the command's); Atropos's own default
 * is always accepted, so an Atropos config loads unchanged.
 */
function atroposFields(env: BaseEnvConfig, defaults: Record<string, unknown>, servers: ServerConfig[]): AtroposFields {
  const set = (field: keyof BaseEnvConfig) => JSON.stringify(env[field]) !== JSON.stringify(defaults[field]);
  const out: AtroposFields = { problems: [], notices: [], servers };
  for (const [field, rule] of Object.entries(UNSUPPORTED)) {
    const value = env[field as keyof BaseEnvConfig];
    if (set(field as keyof BaseEnvConfig) && !rule.accepts(value))
      out.problems.push(`--env.${field} ${JSON.stringify(value)}: ${rule.why}`);
  }

  // As in Atropos's environments, the thinking prompt goes in only in thinking mode.
  if (env.custom_thinking_prompt !== null && !env.thinking_mode) {
    out.notices.push('--env.custom_thinking_prompt is not used: it is the system prompt of thinking mode (--env.thinking_mode true)');
  }

  // Atropos's workers are groups in flight: max_num_workers, or max_num_workers_per_node per inference server.
  const workers =
    set('max_num_workers') && env.max_num_workers > 0
      ? env.max_num_workers
      : set('max_num_workers_per_node') && env.max_num_workers === -1
        ? env.max_num_workers_per_node * servers.length
        : undefined;
  if (workers !== undefined) {
    if (set('max_groups_in_flight') && env.max_groups_in_flight !== workers) {
      out.problems.push(
        `--env.max_num_workers: ${workers} workers disagree with --env.max_groups_in_flight ${env.max_groups_in_flight}; set one`,
      );
    } else {
      out.maxGroupsInFlight = workers;
      out.notices.push(`--env.max_num_workers: ${workers} groups in flight (max_groups_in_flight)`);
    }
  }

  // Atropos's env tokenizer is the policy's: it is the tokenizer the served model must share.
  if (set('tokenizer_name') && env.tokenizer_name !== ATROPOS_TOKENIZER) {
    if (servers.some((s) => s.base_url === '')) {
      out.problems.push(
        `--env.tokenizer_name ${env.tokenizer_name}: the embedded engine (no --openai.base_url) serves a model with its own tokenizer; give --openai.base_url for a server of that model`,
      );
    }
    const other = servers.find((s) => s.tokenizer_name !== 'none' && s.tokenizer_name !== env.tokenizer_name);
    if (other)
      out.problems.push(
        `--env.tokenizer_name ${env.tokenizer_name} and --openai.tokenizer_name ${other.tokenizer_name} name different tokenizers for the policy`,
      );
    out.servers = servers.map((s) => (s.tokenizer_name === 'none' ? { ...s, tokenizer_name: env.tokenizer_name } : s));
  }
  return out;
}

/**
 * Settings that each field's schema allows but that contradict each other, as Clotho runs them: teacher logprobs need
 * tokens and a teacher server.
 */
function combinations(env: BaseEnvConfig, teacher: ServerConfig[]): string[] {
  const problems: string[] = [];
  if (env.messages_only && env.teacher_enabled) {
    problems.push('--env.teacher_enabled: a messages-only run (--env.messages_only) has no tokens for teacher logprobs');
  }
  if (env.teacher_enabled && teacher.length === 0) problems.push('--teacher.base_url: --env.teacher_enabled needs a teacher server');
  return problems;
}

/**
 * The `env` fields and policy servers a command runs with: Atropos's fields applied ({@link atroposFields}, with
 * `defaults` the base fields' defaults as the command has them) and the combinations checked.
 * @throws ConfigError naming every problem.
 */
export function applyRules<Env extends BaseEnvConfig>(
  config: { env: Env; servers: ServerConfig[]; teacher: ServerConfig[] },
  defaults: Record<string, unknown>,
): { env: Env; servers: ServerConfig[]; notices: string[] } {
  const atropos = atroposFields(config.env, defaults, config.servers);
  const problems = [...atropos.problems, ...combinations(config.env, config.teacher)];
  if (problems.length > 0) throw new ConfigError(problems);
  const { maxGroupsInFlight } = atropos;
  const env = maxGroupsInFlight === undefined ? config.env : { ...config.env, max_groups_in_flight: maxGroupsInFlight };
  return { env, servers: atropos.servers, notices: atropos.notices };
}
