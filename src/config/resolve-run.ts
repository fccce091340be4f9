import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { AnyEnvironment } from '../env/define.js';
import { openStore, STORE_FLAG_HELP } from '../store/open-store.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { flagValue } from './argv.js';
import { ConfigError } from './config-error.js';
import { resolveConfig, type ResolvedConfig } from './resolve.js';
import { applyRules } from './rules.js';
import { runConfigKey, settleRunConfig, type RunConfigRecord, type SettledRunConfig } from './run-config.js';
import { BaseEnvConfigSchema, type BaseEnvConfig } from './schemas.js';

/** Flags every rollout command takes besides the `--env.*`, `--openai.*`, `--teacher.*` and `--steps.*` namespaces. */
export const RUN_FLAGS = {
  store: z.string().min(1).optional().describe(STORE_FLAG_HELP),
  // Where inference comes from when no server is given.
  model: z
    .string()
    .min(1)
    .default('generate:tiny')
    .describe(
      'model of the embedded engine started when no --openai.base_url is given (a .gguf, generate:tiny, generate:0.5b, or a Hugging Face repo id)',
    ),
};

/** What a rollout command brings to its config besides the command line. */
export interface CommandOptions {
  /** The command's own un-namespaced flags, besides {@link RUN_FLAGS}. */
  commandFlags?: z.ZodRawShape;
  /** The command's own defaults, below the environment's YAML and flags (Atropos's `process` keeps all groups). */
  defaults?: Partial<BaseEnvConfig>;
  /** Whether the command belongs to a run whose config it records or adopts (not `evaluate`, which has none). @default true */
  runConfig?: boolean;
}

/** The flags a command takes: {@link RUN_FLAGS} and its own. */
export const commandFlagsOf = (options: CommandOptions): z.ZodRawShape => ({ ...RUN_FLAGS, ...options.commandFlags });

/**
 * The environment as a command sees it, its defaults layered: the environment's, then the command's, then the fields
 * its run recorded (YAML and flags go on top of these).
 */
export function commandDefinition(
  environment: AnyEnvironment,
  options: CommandOptions,
  recorded?: Record<string, unknown>,
): AnyEnvironment {
  return { ...environment, defaults: { ...environment.defaults, ...options.defaults, ...recorded } };
}

/** One environment's run as its command line describes it, resolved once: nothing edits it afterwards. */
export interface ResolvedRun {
  runId: string;
  /** The environment, with its defaults as this command had them ({@link commandDefinition}). */
  definition: AnyEnvironment;
  config: ResolvedConfig<z.ZodRawShape, typeof RUN_FLAGS>;
  store: TrajectoryStore;
  /** The environment config the run carries (recorded by this command, or adopted from the run); absent for evaluate. */
  runConfig?: SettledRunConfig;
  /** Lines to print: a setting taken over from an Atropos field, or one accepted and not acted on. */
  notices: string[];
}

/**
 * Resolves `[flags]` of a rollout command on `environment` into its run's config: the store and the run's record it
 * names, flags and YAML over the layered defaults, Atropos's field rules, then the run's config recorded or adopted.
 * @throws ConfigError naming every bad flag, or each field that differs from the run's.
 */
export async function resolveRun(environment: AnyEnvironment, argv: string[], options: CommandOptions = {}): Promise<ResolvedRun> {
  const carriesRunConfig = options.runConfig !== false;
  // A run's recorded config is the defaults of every later command of it, so a worker needs none of its flags, not
  // even the required ones; what the command sets itself is checked against it below.
  const store = openFlagStore(flagValue(argv, 'store'));
  const givenRunId = flagValue(argv, 'env.run_id');
  const recorded =
    carriesRunConfig && givenRunId ? await store.tryGet<RunConfigRecord>(runConfigKey(givenRunId, environment.name)) : undefined;
  const definition = commandDefinition(environment, options, recorded?.env);
  const resolved = resolveConfig({ argv, environment: definition, commandFlags: commandFlagsOf(options) });
  const runId = resolved.env.run_id ?? newRunId(definition.name);
  // Base fields only: an environment's defaults may also set its own fields.
  const defaults = z.object(BaseEnvConfigSchema.shape).parse(definition.defaults ?? {});
  const { env, servers, notices } = applyRules(resolved, defaults);
  // Resolved once per run: every later command of the run (resume, `clotho worker`) takes the run's fields.
  const settled = carriesRunConfig ? await settleRunConfig(store, runId, definition.name, env, resolved.given.env) : undefined;
  return {
    runId,
    definition,
    // Typed by RUN_FLAGS alone: the command's own flags are its own to read (`rest.flags`).
    config: { ...resolved, env: settled?.env ?? env, servers } as ResolvedRun['config'],
    store,
    notices,
    ...(settled ? { runConfig: settled.settled } : {}),
  };
}

function openFlagStore(flag: string | undefined): TrajectoryStore {
  try {
    return openStore(flag);
  } catch (error) {
    throw new ConfigError([(error as Error).message]);
  }
}

/** `gsm8k-20261121-121500-a1b2`: sortable, unique enough, readable in the Temporal UI. */
export function newRunId(environment: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${environment}-${stamp}-${randomBytes(2).toString('hex')}`;
}
