import { createHash } from 'node:crypto';
import { canonicalJson } from '../schema/canonical-json.js';
import { isDeepStrictEqual } from 'node:util';
import { storeKey, type TrajectoryStore } from '../store/trajectory-store.js';
import { ConfigError } from './config-error.js';

/**
 * `env` fields that belong to one process, not to the run: where this command writes, what it logs, how it reaches
 * the API. Every other field is the run's: what the environment prompts, samples and scores with.
 */
export const PER_PROCESS_FIELDS: readonly string[] = [
  'run_id',
  'data_path_to_save_groups',
  'data_dir_to_save_evals',
  'use_wandb',
  'wandb_name',
  'rollout_server_url',
  'num_rollouts_to_keep',
  'num_rollouts_per_group_for_logging',
  'min_items_sent_before_logging',
];

/** The environment config a run carries, as the store keeps it (`<run>/<env>/run-config`). */
export interface RunConfigRecord {
  environment: string;
  /** The run's `env` fields (per-process ones left out). */
  env: Record<string, unknown>;
  /** sha256 of `env` in canonical JSON: the env-run's input carries it, so the UI shows which config a run has. */
  digest: string;
}

export const runConfigKey = (runId: string, environment: string) => storeKey(runId, environment, 'run-config');

const runFields = (env: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(env).filter(([k]) => !PER_PROCESS_FIELDS.includes(k)));

/** What settling a run's config found: a new run (this command's config, to record), or the run's, adopted. */
export interface SettledRunConfig {
  record: RunConfigRecord;
  /** `new`: the run has no config yet, this command's is recorded when its workers start; `adopted`: the run's. */
  how: 'new' | 'adopted';
}

/** Records a new run's config, before any of its workers starts. */
export async function recordRunConfig(store: TrajectoryStore, runId: string, record: RunConfigRecord): Promise<void> {
  await store.put(runConfigKey(runId, record.environment), record);
}

/**
 * Resolves an environment's config once per run. The first command of a run records its `env` fields in the store
 * ({@link recordRunConfig}); every later one (a resumed `process` or `serve`, `clotho worker` on any host) takes the run's instead of its own, so
 * that every worker prompts and scores alike. A command whose flags or YAML set a run field to another value than the
 * run's is refused, naming each field with both values; per-process fields ({@link PER_PROCESS_FIELDS}) stay its own.
 * Returns the env config the command must use.
 */
export async function settleRunConfig<Env extends Record<string, unknown>>(
  store: TrajectoryStore,
  runId: string,
  environment: string,
  env: Env,
  given: readonly string[],
): Promise<{ env: Env; settled: SettledRunConfig }> {
  const key = runConfigKey(runId, environment);
  const existing = await store.tryGet<RunConfigRecord>(key);
  if (!existing) {
    const fields = runFields(env);
    const record = { environment, env: fields, digest: createHash('sha256').update(canonicalJson(fields)).digest('hex') };
    return { env, settled: { record, how: 'new' } };
  }
  const differing = given
    .filter((field) => !PER_PROCESS_FIELDS.includes(field) && field in existing.env && !isDeepStrictEqual(env[field], existing.env[field]))
    .map((field) => `--env.${field}: this command says ${JSON.stringify(env[field])}, the run has ${JSON.stringify(existing.env[field])}`);
  if (differing.length > 0) {
    throw new ConfigError([
      `run ${runId} (${environment}) carries its own environment config; this command's differs, so its workers would prompt or score otherwise:`,
      ...differing,
      "leave those flags out to take the run's values, or start a new run (without --env.run_id)",
    ]);
  }
  // The run's fields, plus this process's own; fields a newer environment version added keep this command's values.
  const own = Object.fromEntries(PER_PROCESS_FIELDS.filter((k) => k in env).map((k) => [k, env[k]]));
  return {
    // The recorded fields were this environment's config when the run started: the same shape.
    env: { ...env, ...existing.env, ...own } as Env,
    settled: { record: existing, how: 'adopted' },
  };
}
