import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { BaseEnvConfigSchema, ServerConfigSchema, StepConfigSchema, type ServerConfig } from '../schema/config.js';
import { STEP_NAMES, type StepOptionsTable } from '../schema/rollout.js';
import type { EnvConfig, EnvironmentDefinition } from './define.js';
import { defaultStepConfigs, toStepOptions, type StepConfigTable } from './steps.js';

/** Every problem found in the flags and the YAML file, each naming where it came from. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

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

type Json = {
  type?: string | string[];
  anyOf?: Json[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
};

function jsonSchema(schema: z.ZodType): Json {
  try {
    return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;
  } catch {
    return {}; // e.g. a recursive schema: zod alone validates it, help shows no type
  }
}
// A nullable field is `anyOf [T, null]` or `type: [t, "null"]`; its kind is T's.
function core(json: Json): Json & { type?: string } {
  const inner = json.anyOf?.find((branch) => branch.type !== 'null') ?? json;
  return { ...inner, type: Array.isArray(inner.type) ? inner.type.find((t) => t !== 'null') : inner.type };
}
const isNullable = (json: Json): boolean =>
  (json.anyOf?.some((branch) => branch.type === 'null') ?? false) || (Array.isArray(json.type) && json.type.includes('null'));

/** What a field accepts, in words: "a positive integer", "one of a, b", "a number between 0 and 1 or None". */
function expectation(schema: z.ZodType): string {
  const json = jsonSchema(schema);
  const c = core(json);
  let text: string;
  if (c.enum) text = `one of ${c.enum.join(', ')}`;
  else if (c.const !== undefined) text = `exactly ${JSON.stringify(c.const)}`;
  else if (c.type === 'boolean') text = 'true or false';
  else if (c.type === 'integer' || c.type === 'number') {
    const noun = c.type === 'integer' ? 'integer' : 'number';
    // `.int()` bounds an integer to the safe range; that is not worth saying.
    const max = c.maximum !== undefined && c.maximum < Number.MAX_SAFE_INTEGER ? c.maximum : undefined;
    const min = c.minimum !== undefined && c.minimum > Number.MIN_SAFE_INTEGER ? c.minimum : undefined;
    if (c.exclusiveMinimum === 0 && max === undefined) text = `a positive ${noun}`;
    else if (min === 0 && max === undefined) text = `a non-negative ${noun}`;
    else if (min !== undefined && max !== undefined) text = `${noun === 'integer' ? 'an' : 'a'} ${noun} between ${min} and ${max}`;
    else {
      const bounds = [
        min !== undefined ? `>= ${min}` : '',
        c.exclusiveMinimum !== undefined ? `> ${c.exclusiveMinimum}` : '',
        max !== undefined ? `<= ${max}` : '',
        c.exclusiveMaximum !== undefined ? `< ${c.exclusiveMaximum}` : '',
      ].filter(Boolean);
      text = `${noun === 'integer' ? 'an' : 'a'} ${noun} ${bounds.join(' and ')}`.trim();
    }
  } else if (c.type === 'string') text = c.pattern ? `a string matching /${c.pattern}/` : 'a string';
  else text = c.type ? `a valid ${c.type}` : 'a valid value';
  return isNullable(json) ? `${text} or None` : text;
}

/** Turns a flag's text into the field's type; anything that does not fit is left for zod to report. */
function coerce(value: string | null, schema: z.ZodType | undefined): unknown {
  if (value === null || !schema) return value;
  const c = core(jsonSchema(schema));
  if (c.type === 'integer' || c.type === 'number') return value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
  if (c.type === 'boolean') return value === 'true' ? true : value === 'false' ? false : value;
  if (c.type === 'array' || c.type === 'object') {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}

interface Flag {
  key: string;
  value: string | null | true;
}

/** Splits argv into `--k=v`, `--k v`, bare `--k` (true) and positionals; `None` means null, `--` ends flags. */
function tokenize(argv: string[], isBoolean: (key: string) => boolean): { flags: Flag[]; args: string[] } {
  const flags: Flag[] = [];
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      args.push(...argv.slice(i + 1));
      break;
    }
    if (!token.startsWith('--')) {
      args.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const key = eq < 0 ? token.slice(2) : token.slice(2, eq);
    let value: string | true = eq < 0 ? true : token.slice(eq + 1);
    const next = argv[i + 1];
    // A boolean takes the next token only when it is one, so `--env.use_wandb gsm8k` keeps its positional.
    if (value === true && next !== undefined && !next.startsWith('--') && (!isBoolean(key) || ['true', 'false', 'None'].includes(next))) {
      value = next;
      i++;
    }
    flags.push({ key, value: value === 'None' ? null : value });
  }
  return { flags, args };
}

/**
 * The value of one string flag as the command line gives it (its last occurrence), before anything is resolved: for
 * what resolution itself depends on, such as the run whose config becomes the defaults.
 */
export function flagValue(argv: string[], key: string): string | undefined {
  const value = tokenize(argv, () => false)
    .flags.filter((f) => f.key === key)
    .at(-1)?.value;
  return typeof value === 'string' ? value : undefined;
}

function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/** The nearest known name, if near enough to be a typo; a bare field name also matches its namespaced flag. */
function suggest(name: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 5)) + 1;
  for (const candidate of known) {
    const tail = candidate.slice(candidate.indexOf('.') + 1);
    const d = Math.min(distance(name, candidate), name.includes('.') ? Infinity : distance(name, tail));
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}
const didYouMean = (name: string, known: string[], prefix = ''): string => {
  const s = suggest(name, known);
  return s ? ` (did you mean ${prefix}${s}?)` : '';
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Recursive merge: objects merge key by key, anything else in `over` replaces. */
function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = isObject(v) && isObject(out[k]) ? merge(out[k] as Record<string, unknown>, v) : v;
  return out;
}

/** Where a value came from (a flag, a YAML path, the environment's defaults) and its raw form, by dotted path. */
type Origins = Map<string, { label: string; raw: unknown; cli: boolean }>;

function record(origins: Origins, value: unknown, path: (string | number)[], label: (shown: string) => string): void {
  const shown = path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
  origins.set(path.join('.'), { label: label(shown), raw: value, cli: false });
  if (Array.isArray(value)) value.forEach((v, i) => record(origins, v, [...path, i], label));
  else if (isObject(value)) for (const [k, v] of Object.entries(value)) record(origins, v, [...path, k], label);
}

const got = (raw: unknown, cli: boolean): string =>
  raw === null ? 'None' : raw === true && cli ? 'no value' : (JSON.stringify(raw) ?? String(raw));

/** Validates one section and turns zod's issues into problems that name the flag or YAML path. */
function check<S extends z.ZodType>(
  schema: S,
  value: unknown,
  path: string,
  shape: Shape,
  origins: Origins,
  problems: string[],
): z.infer<S> | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  for (const issue of result.error.issues) {
    const at = [path, ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const label = origins.get(`${at}.${key}`)?.label ?? `${at}.${key}`;
        problems.push(`${label}: unknown key${didYouMean(key, Object.keys(shape))}`);
      }
      continue;
    }
    const origin = origins.get(at);
    const field = issue.path.length === 1 ? shape[String(issue.path[0])] : undefined;
    const wanted = field ? `expected ${expectation(field as z.ZodType)}` : issue.message;
    problems.push(origin ? `${origin.label}: ${wanted}, got ${got(origin.raw, origin.cli)}` : `${at}: ${wanted}`);
  }
  return undefined;
}

const envShape = (environment: Env<Shape>): Shape => ({ ...BaseEnvConfigSchema.shape, ...environment.config });

/** A YAML parse error as one message: what is wrong, where, and the offending line itself. */
function yamlProblem(error: Error & { linePos?: { line: number; col: number }[] }, file: string): string {
  const first = error.message.split('\n')[0]!;
  const at = error.linePos?.[0];
  if (!at) return first;
  const line = readFileSync(file, 'utf8').split('\n')[at.line - 1] ?? '';
  return `${first}\n    ${at.line} | ${line}\n    ${' '.repeat(String(at.line).length)} | ${' '.repeat(Math.max(0, at.col - 1))}^`;
}

/** Reads the YAML file into its four sections, recording where each value came from. */
function readYaml(file: string, origins: Origins, problems: string[]): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8')) ?? {};
  } catch (error) {
    problems.push(`--config ${file}: ${yamlProblem(error as Error & { linePos?: { line: number; col: number }[] }, file)}`);
    return {};
  }
  if (!isObject(doc)) {
    problems.push(`${file}: expected a mapping with env:, openai:, teacher:, steps:`);
    return {};
  }
  const sections = ['env', 'openai', 'teacher', 'judge', 'steps'];
  for (const [key, value] of Object.entries(doc)) {
    if (!sections.includes(key)) problems.push(`${file}: ${key}: unknown section${didYouMean(key, sections)}`);
    else record(origins, value, [key], (shown) => `${file}: ${shown}`);
  }
  return doc;
}

/** One list of servers from YAML (a mapping or a list) and `--<ns>.*` flags; flags may not override a multi-server list. */
function servers(
  ns: 'openai' | 'teacher' | 'judge',
  fromYaml: unknown,
  flags: Record<string, unknown>,
  origins: Origins,
  problems: string[],
): ServerConfig[] {
  const hasFlags = Object.keys(flags).length > 0;
  const isList = Array.isArray(fromYaml);
  const list: unknown[] = isList ? fromYaml : fromYaml != null ? [fromYaml] : ns === 'openai' || hasFlags ? [{}] : [];
  if (list.length >= 2 && hasFlags) {
    problems.push(
      `--${ns}.${Object.keys(flags)[0]}: cannot override a list of ${list.length} ${ns} servers from the YAML file; edit the file`,
    );
    return [];
  }
  return list.flatMap((item, i) => {
    const at = isList ? `${ns}.${i}` : ns;
    if (!isObject(item)) {
      problems.push(`${origins.get(at)?.label ?? ns}: expected a server mapping`);
      return [];
    }
    if (isList) for (const k of Object.keys(flags)) origins.set(`${at}.${k}`, origins.get(`${ns}.${k}`)!);
    const parsed = check(ServerConfigSchema, merge(item, flags), at, ServerConfigSchema.shape, origins, problems);
    return parsed ? [parsed] : [];
  });
}

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
  const { flags, args } = tokenize(options.argv, (key) => core(jsonSchema(fieldOf(key) ?? z.string())).type === 'boolean');
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

/** One line of `--help`. */
export interface FlagRow {
  flag: string;
  type: string;
  default: string;
  description: string;
}

const shown = (value: unknown): string =>
  value === undefined ? '' : value === null ? 'None' : typeof value === 'string' ? value : JSON.stringify(value);

function rows(prefix: string, shape: Shape, defaults: Record<string, unknown> = {}): FlagRow[] {
  return Object.entries(shape).map(([name, schema]) => {
    const json = jsonSchema(schema as z.ZodType);
    return {
      flag: `--${prefix}${name}`,
      type: expectation(schema as z.ZodType).replace(/^an? /, ''),
      default: shown(name in defaults ? defaults[name] : json.default),
      // Every field's words come from its schema's `.describe()` (src/schema/config.ts, the environment's own config).
      description: json.description ?? '',
    };
  });
}

/** The flags an environment (and optionally a command) accepts, with types, defaults and descriptions, for `--help`. */
export function describeFlags(environment: Env<Shape>, commandFlags: Shape = {}): FlagRow[] {
  const local = defaultStepConfigs({ generate: 1, teacher: 1 }).score; // all local steps share one default
  return [
    { flag: '--config', type: 'path', default: '', description: 'YAML file with env:, openai:, teacher:, steps: sections' },
    ...rows('', commandFlags),
    ...rows('env.', envShape(environment), environment.defaults as Record<string, unknown>),
    ...rows('openai.', ServerConfigSchema.shape),
    { flag: '--teacher.<field>', type: '', default: '', description: 'the --openai.<field> flags, for the teacher servers' },
    { flag: '--judge.<field>', type: '', default: '', description: 'the --openai.<field> flags, for the judge model rewards may call' },
    {
      flag: '--steps.<step>.<field>',
      type: '',
      default: '',
      description: `retry policy of a workflow step: ${STEP_NAMES.join(', ')}; generate, teacher and judge default to the server timeout, a 10 s heartbeat timeout and 10 attempts on the LLM queue; tool, setup and teardown to 300 s, a 10 s heartbeat timeout and 5 attempts on the env queue`,
    },
    ...rows('steps.<step>.', StepConfigSchema.shape, local),
  ];
}
