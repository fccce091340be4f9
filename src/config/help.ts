import type { z } from 'zod';
import type { AnyEnvironment } from '../env/define.js';
import { STEP_NAMES } from '../schema/rollout.js';
import { expectation, jsonSchema } from './fields.js';
import { envShape } from './resolve.js';
import { commandDefinition, commandFlagsOf, type CommandOptions } from './resolve-run.js';
import { ServerConfigSchema, StepConfigSchema } from './schemas.js';
import { defaultStepConfigs } from './steps.js';

type Shape = z.ZodRawShape;

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
      // Every field's words come from its schema's `.describe()` (schemas.ts, the environment's own config).
      description: json.description ?? '',
    };
  });
}

/** The flags an environment (and optionally a command) accepts, with types, defaults and descriptions, for `--help`. */
export function describeFlags(environment: AnyEnvironment, commandFlags: Shape = {}): FlagRow[] {
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
      description: `retry policy of a workflow step: ${STEP_NAMES.join(', ')}; generate, teacher and judge default to the server timeout, a 10 s heartbeat timeout and 10 attempts on the LLM queue; tool, setup and teardown to 300 s, a 10 s heartbeat timeout and 5 attempts on the env queue; harness (an agent's episode) to 3600 s, on the env queue`,
    },
    ...rows('steps.<step>.', StepConfigSchema.shape, local),
  ];
}

/**
 * A rollout command's flag lines for `--help` on an environment, with the defaults and command flags it runs with;
 * `computed` holds defaults the command works out itself (from the environment's name), shown instead of the schema's.
 */
export function flagHelp(environment: AnyEnvironment, options: CommandOptions = {}, computed: Record<string, string> = {}): string[] {
  const flagRows = describeFlags(commandDefinition(environment, options), commandFlagsOf(options)).map((r) =>
    r.flag in computed ? { ...r, default: computed[r.flag]! } : r,
  );
  const width = Math.min(48, Math.max(...flagRows.map((r) => `${r.flag} ${r.type}`.length)));
  return flagRows.map((r) => {
    const left = `${r.flag} ${r.type}`.padEnd(width);
    const fallback = r.default === '' ? '' : ` (default ${r.default})`;
    return `  ${left}  ${r.description}${fallback}`;
  });
}
