import { z } from 'zod';
import type { EnvConfig, EnvironmentDefinition } from '../env/define.js';
import { STEP_NAMES, type StepOptionsTable } from '../schema/rollout.js';
import { tokenize } from './argv.js';
import { ConfigError } from './config-error.js';
import { coerce, kindOf } from './fields.js';
import { merge, isObject } from './merge.js';
import { check, type Origins } from './origins.js';
import { BaseEnvConfigSchema, ServerConfigSchema, StepConfigSchema, type ServerConfig } from './schemas.js';
import { servers } from './servers.js';
import { defaultStepConfigs, toStepOptions, type StepConfigTable } from './steps.js';
import { didYouMean } from './suggest.js';
import { readYaml } from './yaml.js';

type Shape = z.ZodRawShape;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any item and parse types: config reads neither, and `unknown` would refuse environments whose methods take their own
type Env<Extra extends Shape> = EnvironmentDefinition<any, any, Extra>;

export interface ResolveConfigOptions<Extra extends Shape, Flags extends Shape> {
  /** Arguments after the command name (`process.argv.slice(3)` or so). */
  argv: string[];
  environment: Env<Extra>;
  /** The command's own un-namespaced flags (`--max-groups`), by name without the dashes. */
  commandFlags?: Flags;
}

export interface ResolvedConfig<Extra extends Shape, Flags extends Shape> {
  env: EnvConfig<Extra>;
  /** Policy inference servers (`--openai.*`, YAML `openai:`); one default server when none is given. */
  servers: ServerConfig[];
  /** Teacher servers (`--teacher.*`, YAML `teacher:`); empty when none is given. */
  teacher: ServerConfig[];
  /** Judge servers for rewards that call a model (`--judge.*`, YAML `judge:`); empty when none is given. */
  judge: ServerConfig[];
  steps: StepOptionsTable;
  /** Positional arguments and the command's own flags, validated by `commandFlags`. */
  rest: { args: string[]; flags: z.infer<z.ZodObject<Flags>> };
  /** The `env` fields this command line set (by flag or YAML), as opposed to defaults. */
  given: { env: string[] };
}

/** Every `--env.*` field of an environment: Atropos's base fields, then its own. */
export const envShape = (environment: Env<Shape>): Shape => ({ ...BaseEnvConfigSchema.shape, ...environment.config });

/**
 * Resolves an environment's configuration from flags and an optional YAML file (Atropos's flag model,
 * ATROPOS-API.md §3.7): CLI > YAML > environment defaults > schema defaults, merged recursively.
 * @throws ConfigError listing every problem at once.
 */
export function resolveConfig<Extra extends Shape, Flags extends Shape = Record<never, never>>(
  options: ResolveConfigOptions<Extra, Flags>,
): ResolvedConfig<Extra, Flags> {
  const { environment } = options;
  const commandFlags = (options.commandFlags ?? {}) as Flags;
  const env = envShape(environment);
  const server = ServerConfigSchema.shape as Shape;
  const step = StepConfigSchema.shape as Shape;
  const own = (shape: Shape, name: string | undefined) =>
    name !== undefined && Object.hasOwn(shape, name) ? (shape[name] as z.ZodType) : undefined;
  const fieldOf = (key: string): z.ZodType | undefined => {
    const [ns, a, b, ...extra] = key.split('.');
    if (extra.length > 0) return undefined;
    if (a === undefined) return own(commandFlags, ns);
    if (b === undefined)
      return ns === 'env' ? own(env, a) : ns === 'openai' || ns === 'teacher' || ns === 'judge' ? own(server, a) : undefined;
    return ns === 'steps' && (STEP_NAMES as readonly string[]).includes(a) ? own(step, b) : undefined;
  };
  const known = [
    'config',
    ...Object.keys(env).map((k) => `env.${k}`),
    ...Object.keys(server).flatMap((k) => [`openai.${k}`, `teacher.${k}`, `judge.${k}`]),
    ...STEP_NAMES.flatMap((s) => Object.keys(step).map((k) => `steps.${s}.${k}`)),
    ...Object.keys(commandFlags),
  ];

  const problems: string[] = [];
  const origins: Origins = new Map();
  const { flags, args } = tokenize(options.argv, (key) => kindOf(fieldOf(key) ?? z.string()) === 'boolean');
  const configFlags = flags.filter((f) => f.key === 'config');
  const configFile = configFlags.at(-1)?.value;
  if (configFlags.length > 0 && typeof configFile !== 'string') problems.push('--config: expected a path to a YAML file');
  // YAML origins first, so that a flag setting the same field overwrites them: CLI > YAML.
  const yaml = typeof configFile === 'string' ? readYaml(configFile, origins, problems) : {};
  const cli: Record<string, Record<string, unknown>> = { env: {}, openai: {}, teacher: {}, judge: {}, steps: {}, rest: {} };
  for (const { key, value } of flags) {
    if (key === 'config') continue;
    const field = fieldOf(key);
    if (!field) {
      problems.push(`unknown flag --${key}${didYouMean(key, known, '--')}`);
      continue;
    }
    const parts = key.split('.');
    const target =
      parts.length === 3 ? ((cli.steps![parts[1]!] ??= {}) as Record<string, unknown>) : cli[parts.length === 1 ? 'rest' : parts[0]!]!;
    target[parts.at(-1)!] = value === true ? true : coerce(value, field);
    origins.set(parts.length === 1 ? `rest.${key}` : key, { label: `--${key}`, raw: value, cli: true });
  }

  // A section of the file or of its steps, by its own path: `steps.teacher` is never the top-level `teacher:`.
  const section = (at: string, value: unknown): Record<string, unknown> => {
    // An empty YAML section (`env:` with every line commented out) reads as null.
    if (value === undefined || value === null) return {};
    if (isObject(value)) return value;
    problems.push(`${configFile}: ${at}: expected a mapping`);
    return {};
  };
  const defaults = (environment.defaults ?? {}) as Record<string, unknown>;
  for (const [k, raw] of Object.entries(defaults)) {
    if (!origins.has(`env.${k}`)) origins.set(`env.${k}`, { label: `${environment.name} defaults: ${k}`, raw, cli: false });
  }
  const envSchema = BaseEnvConfigSchema.extend(environment.config);
  const envConfig = check(envSchema, merge(merge(defaults, section('env', yaml.env)), cli.env!), 'env', env, origins, problems);

  const policy = servers('openai', yaml.openai, cli.openai!, origins, problems);
  const teacher = servers('teacher', yaml.teacher, cli.teacher!, origins, problems);
  const judge = servers('judge', yaml.judge, cli.judge!, origins, problems);
  const timeout = (list: ServerConfig[]) => (list.length ? Math.max(...list.map((s) => s.timeout)) : undefined);
  const generate = timeout(policy) ?? ServerConfigSchema.shape.timeout.parse(undefined);
  const stepDefaults = defaultStepConfigs({ generate, teacher: timeout(teacher) ?? generate, judge: timeout(judge) ?? generate });
  const stepYaml = section('steps', yaml.steps);
  for (const name of Object.keys(stepYaml)) {
    if (!(STEP_NAMES as readonly string[]).includes(name))
      problems.push(`${configFile}: steps.${name}: unknown step${didYouMean(name, [...STEP_NAMES])}`);
  }
  const steps = {} as StepConfigTable;
  for (const name of STEP_NAMES) {
    const over = merge(section(`steps.${name}`, stepYaml[name]), (cli.steps![name] ?? {}) as Record<string, unknown>);
    const parsed = check(StepConfigSchema, merge(stepDefaults[name], over), `steps.${name}`, step, origins, problems);
    // Deliveries run beside the launches of the env-run; a local activity there could reorder commands on replay.
    if (parsed && name === 'deliver' && parsed.local)
      problems.push(
        '--steps.deliver.local: deliveries cannot run as local activities (they run beside launches, and replay must keep their order)',
      );
    else if (parsed) steps[name] = parsed;
  }
  const restFlags = check(z.strictObject(commandFlags), cli.rest, 'rest', commandFlags, origins, problems);

  if (problems.length > 0 || !envConfig || !restFlags) throw new ConfigError(problems);
  const given = { env: [...new Set([...Object.keys(section('env', yaml.env)), ...Object.keys(cli.env!)])] };
  return {
    env: envConfig as EnvConfig<Extra>,
    servers: policy,
    teacher,
    judge,
    steps: toStepOptions(steps),
    rest: { args, flags: restFlags },
    given,
  };
}
