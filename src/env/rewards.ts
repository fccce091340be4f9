/**
 * Rewards, one mechanism: a reward function sees one trajectory's {@link ScoreContext} (item, completion, parsed,
 * config, state, …) and gives a number, or a score with metrics of its own. An environment's `score` is one such
 * function, or a weighted list of them combined by {@link combineRewards} (verifiers' Rubric, Atropos's `reward_fns`):
 * built-ins chosen by name with parameters (./reward-functions.ts) and the environment's own functions. The score is
 * the weighted sum; each named function's value is a metric.
 */
import { z } from 'zod';
import type { BaseEnvConfig } from '../config/schemas.js';
import type { MaybePromise, ScoreContext, ScoreResult } from './define.js';
import { BUILTIN_REWARDS } from './reward-functions.js';

/** A reward function: one trajectory's context in; its value out, a number or a score with metrics of its own. */
export type RewardFn<Item = unknown, Parsed = unknown, Config = BaseEnvConfig, State = unknown> = (
  context: ScoreContext<Item, Parsed, Config, State>,
) => MaybePromise<number | ScoreResult>;

/** A reward function's answer as a score and its metrics. */
export function toScoreResult(value: number | ScoreResult): ScoreResult {
  return typeof value === 'number' ? { score: value } : value;
}

/** A named family of reward functions in a registry: its parameters and how to make one from them. */
export interface RewardDefinition<Params extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  description: string;
  /** The parameters, with their defaults; unknown ones are rejected. */
  params: Params;
  /** It reads the gold answer (the item's `answer`), so the data set must have one. */
  needsAnswer?: boolean;
  /** Makes the function; may throw on parameters that do not fit together, and the message is reported with the spec. */
  create(params: z.infer<z.ZodObject<Params>>): RewardFn;
}

/** Declares a reward function for a registry; the identity function that gives its parameters their types. */
export function defineReward<Params extends z.ZodRawShape>(definition: RewardDefinition<Params>): RewardDefinition<Params> {
  return definition;
}

/** Reward functions by name. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rewards of different parameters side by side
export type RewardRegistry = Record<string, RewardDefinition<any>>;

/** The built-in reward functions: accuracy, format, length, repetition_penalty, cosine_scaled. */
export const REWARD_FUNCTIONS: RewardRegistry = BUILTIN_REWARDS;

/**
 * A built-in in a reward list, as config gives it: a name, or an object with the function's `name` (or Atropos's
 * `type`), its `weight` (default 1), an optional `metric` key (default the name), and its parameters inline or under
 * `params`.
 */
export const RewardSpecSchema = z.union([
  z.string().min(1),
  z.looseObject({
    name: z.string().min(1).optional(),
    type: z.string().min(1).optional(),
    weight: z.number().refine(Number.isFinite, 'a finite number').optional(),
    metric: z.string().min(1).optional(),
    params: z.record(z.string(), z.unknown()).optional(),
  }),
]);
/** A built-in in a reward list: its name, or an object with its `name` (or `type`), `weight`, `metric` and parameters. */
export type RewardSpec = z.infer<typeof RewardSpecSchema>;

/** One of the environment's own reward functions in a list. */
export interface WeightedReward<Item = unknown, Parsed = unknown, Config = BaseEnvConfig, State = unknown> {
  /** Its metric key. Unnamed, its value counts in the score without a metric of its own (its returned metrics still count). */
  name?: string;
  /** @default 1 */
  weight?: number;
  reward: RewardFn<Item, Parsed, Config, State>;
}

/** One entry of a reward list: a built-in chosen by name, or one of the environment's own functions. */
export type RewardEntry<Item = unknown, Parsed = unknown, Config = BaseEnvConfig, State = unknown> =
  RewardSpec | WeightedReward<Item, Parsed, Config, State>;

/** How weighted rewards add up: `none` Σ wᵢrᵢ; `sum` divides that by Σ wᵢ (Atropos's dataset environment). */
export type RewardNormalization = 'none' | 'sum';

interface Resolved<Item, Parsed, Config, State> {
  /** Null for an unnamed function of the environment's own: no metric of its own. */
  metric: string | null;
  weight: number;
  fn: RewardFn<Item, Parsed, Config, State>;
  needsAnswer: boolean;
}

/** A problem with one entry, at its index in the list and the key inside it. */
interface Problem {
  path: (string | number)[];
  message: string;
}

const RESERVED = new Set(['name', 'type', 'weight', 'metric', 'params']);

const isOwn = <Item, Parsed, Config, State>(
  entry: RewardEntry<Item, Parsed, Config, State>,
): entry is WeightedReward<Item, Parsed, Config, State> => typeof entry === 'object' && typeof entry.reward === 'function';

/** A built-in entry made into its function, or the problems with it. */
function builtIn(
  spec: RewardSpec,
  registry: RewardRegistry,
): { resolved: Omit<Resolved<unknown, unknown, BaseEnvConfig, unknown>, 'weight'> } | { problems: Problem[] } {
  const entry = typeof spec === 'string' ? { name: spec } : spec;
  if (entry.name !== undefined && entry.type !== undefined) return { problems: [{ path: [], message: 'give name or type, not both' }] };
  const name = entry.name ?? entry.type;
  if (name === undefined) return { problems: [{ path: [], message: "missing the reward function's name" }] };
  const definition = Object.hasOwn(registry, name) ? registry[name] : undefined;
  if (!definition) {
    return { problems: [{ path: [], message: `unknown reward function "${name}"; known: ${Object.keys(registry).join(', ')}` }] };
  }
  const inline = Object.fromEntries(Object.entries(entry).filter(([key]) => !RESERVED.has(key)));
  const parsed = z.strictObject(definition.params).safeParse({ ...inline, ...entry.params });
  if (!parsed.success) {
    const known = Object.keys(definition.params).join(', ') || 'none';
    return {
      problems: parsed.error.issues.flatMap((issue) =>
        (issue.code === 'unrecognized_keys' ? issue.keys : [issue.path.join('.')]).map((key) => ({
          path: [key],
          message:
            issue.code === 'unrecognized_keys'
              ? `${name} has no parameter "${key}" (its parameters: ${known})`
              : `${name}: ${issue.message}`,
        })),
      ),
    };
  }
  try {
    return { resolved: { metric: entry.metric ?? name, fn: definition.create(parsed.data), needsAnswer: definition.needsAnswer ?? false } };
  } catch (error) {
    return { problems: [{ path: [], message: `${name}: ${(error as Error).message}` }] };
  }
}

// Config extends the base fields: the built-ins take any environment's context.
function resolve<Item, Parsed, Config extends BaseEnvConfig, State>(
  entries: readonly RewardEntry<Item, Parsed, Config, State>[],
  registry: RewardRegistry,
): { resolved: Resolved<Item, Parsed, Config, State>[]; problems: Problem[] } {
  const resolved: Resolved<Item, Parsed, Config, State>[] = [];
  const problems: Problem[] = [];
  if (entries.length === 0) problems.push({ path: [], message: 'name at least one reward function' });
  entries.forEach((entry, i) => {
    const weight = typeof entry === 'string' ? 1 : (entry.weight ?? 1);
    if (!Number.isFinite(weight)) return void problems.push({ path: [i, 'weight'], message: 'a finite number' });
    const own = isOwn(entry);
    const made = own ? { resolved: { metric: entry.name ?? null, fn: entry.reward, needsAnswer: false } } : builtIn(entry, registry);
    if ('problems' in made) return void problems.push(...made.problems.map((p) => ({ ...p, path: [i, ...p.path] })));
    const { metric } = made.resolved;
    if (metric !== null && resolved.some((r) => r.metric === metric)) {
      const fix = own ? 'give one another name' : 'give one its own "metric"';
      return void problems.push({ path: [i], message: `a second reward named "${metric}": ${fix}` });
    }
    resolved.push({ ...made.resolved, weight });
  });
  return { resolved, problems };
}

/** A list of reward functions bound to their parameters and weights. */
export interface CombinedReward<Item = unknown, Parsed = unknown, Config = BaseEnvConfig, State = unknown> {
  /** Metric keys of the named functions, in list order. */
  metrics: string[];
  /** Some built-in reads the gold answer (the item's `answer`). */
  needsAnswer: boolean;
  /** The weighted combination as the score, and each named function's own (unweighted) value as a metric. */
  readonly score: (context: ScoreContext<Item, Parsed, Config, State>) => Promise<ScoreResult>;
}

/** How {@link combineRewards} adds the rewards up, where it finds built-ins by name, and how its errors name the list. */
export interface CombineRewardsOptions {
  /** @default 'none' */
  normalization?: RewardNormalization;
  /** @default REWARD_FUNCTIONS */
  registry?: RewardRegistry;
  /** The list's name in error messages. @default 'reward_fns' */
  field?: string;
}

/**
 * Binds a reward list: each built-in made from the registry with its parameters, each function weighted, the score
 * their weighted sum. A list of one unnamed function of weight 1 scores exactly as that function does.
 * @throws Error naming every bad entry (`reward_fns[1].ngram_size: …`).
 */
export function combineRewards<Item = unknown, Parsed = unknown, Config extends BaseEnvConfig = BaseEnvConfig, State = unknown>(
  entries: readonly RewardEntry<Item, Parsed, Config, State>[],
  options: CombineRewardsOptions = {},
): CombinedReward<Item, Parsed, Config, State> {
  const { resolved, problems } = resolve(entries, options.registry ?? REWARD_FUNCTIONS);
  if (problems.length > 0) {
    const field = options.field ?? 'reward_fns';
    const where = (path: (string | number)[]) => `${field}${path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('')}`;
    throw new Error(`invalid reward functions:\n  ${problems.map((p) => `${where(p.path)}: ${p.message}`).join('\n  ')}`);
  }
  const total = resolved.reduce((sum, r) => sum + r.weight, 0);
  const divisor = options.normalization === 'sum' && total !== 0 ? total : 1;
  return {
    metrics: resolved.flatMap((r) => (r.metric === null ? [] : [r.metric])),
    needsAnswer: resolved.some((r) => r.needsAnswer),
    async score(context) {
      const values = await Promise.all(resolved.map(({ fn }) => fn(context)));
      const metrics: Record<string, number> = {};
      let score = 0;
      resolved.forEach(({ metric, weight }, i) => {
        const value = toScoreResult(values[i]!);
        if (metric !== null) metrics[metric] = value.score;
        Object.assign(metrics, value.metrics);
        score += weight * value.score;
      });
      return { score: score / divisor, metrics };
    },
  };
}

/**
 * A config field holding a list of built-ins, checked against the registry when the config is resolved, so a bad
 * name or parameter is a config error naming the flag. On the command line it takes JSON
 * (`'["accuracy",{"name":"format"}]'`) or names separated by commas (`accuracy,format`).
 */
export function rewardSpecsField(defaults: RewardSpec[], registry: RewardRegistry = REWARD_FUNCTIONS) {
  return z
    .preprocess(
      (value) => {
        if (typeof value !== 'string') return value;
        const text = value.trim();
        if (text.startsWith('[') || text.startsWith('{')) {
          try {
            return JSON.parse(text) as unknown;
          } catch {
            return value;
          }
        }
        return text
          .split(',')
          .map((name) => name.trim())
          .filter(Boolean);
      },
      z.array(RewardSpecSchema).superRefine((specs, ctx) => {
        for (const problem of resolve(specs, registry).problems)
          ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
      }),
    )
    .default(defaults);
}
