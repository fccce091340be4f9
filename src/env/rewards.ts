/**
 * Reward functions chosen by name from a registry and combined with weights, as Atropos's `reward_functions` config
 * does: `["accuracy", {name: "format", weight: 0.5}]`. Each function is pure, sees one trajectory, and its name is its
 * metric key. The built-ins are in ./reward-functions.ts.
 */
import { z } from 'zod';
import type { ScoreResult } from './define.js';
import { BUILTIN_REWARDS } from './reward-functions.js';

/** What a reward function sees of one trajectory. */
export interface RewardContext {
  /** The final assistant message's text. */
  completion: string;
  /** The item's gold answer as its data set gives it: text, a number, a list of accepted answers, or null. */
  answer: unknown;
}

/** One reward function, its parameters bound: one trajectory in, one number out. */
export type RewardFn = (context: RewardContext) => number;

/** A named family of reward functions in a registry: its parameters and how to make one from them. */
export interface RewardDefinition<Params extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  description: string;
  /** The parameters, with their defaults; unknown ones are rejected. */
  params: Params;
  /** It reads the gold answer, so the data set must have one. */
  needsAnswer?: boolean;
  /** Makes the function; may throw on parameters that do not fit together, and the message is reported with the spec. */
  create(params: z.infer<z.ZodObject<Params>>): RewardFn;
}

/** Declares a reward function for a registry; the identity function that gives its parameters their types. */
export function defineReward<Params extends z.ZodRawShape>(definition: RewardDefinition<Params>): RewardDefinition<Params> {
  return definition;
}

/** Reward functions by name. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rewards of different item types side by side
export type RewardRegistry = Record<string, RewardDefinition<any>>;

/** The built-in reward functions: accuracy, format, length, repetition_penalty, cosine_scaled. */
export const REWARD_FUNCTIONS: RewardRegistry = BUILTIN_REWARDS;

/**
 * One entry of a reward list: a name, or an object with the function's `name` (or Atropos's `type`), its `weight`
 * (default 1), an optional `metric` key (default the name), and its parameters inline or under `params`.
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
/** One entry of a reward list: a function's name, or an object with its `name` (or `type`), `weight`, `metric` and parameters. */
export type RewardSpec = z.infer<typeof RewardSpecSchema>;

/** How weighted rewards add up: `none` Σ wᵢrᵢ; `sum` divides that by Σ wᵢ (Atropos's dataset environment). */
export type RewardNormalization = 'none' | 'sum';

interface Resolved {
  metric: string;
  weight: number;
  fn: RewardFn;
  needsAnswer: boolean;
}

/** A problem with one spec, at its index in the list and the key inside it. */
interface Problem {
  path: (string | number)[];
  message: string;
}

const RESERVED = new Set(['name', 'type', 'weight', 'metric', 'params']);

function resolve(specs: readonly RewardSpec[], registry: RewardRegistry): { resolved: Resolved[]; problems: Problem[] } {
  const resolved: Resolved[] = [];
  const problems: Problem[] = [];
  if (specs.length === 0) problems.push({ path: [], message: 'name at least one reward function' });
  specs.forEach((spec, i) => {
    const entry = typeof spec === 'string' ? { name: spec } : spec;
    if (entry.name !== undefined && entry.type !== undefined)
      return void problems.push({ path: [i], message: 'give name or type, not both' });
    const name = entry.name ?? entry.type;
    if (name === undefined) return void problems.push({ path: [i], message: "missing the reward function's name" });
    const definition = Object.hasOwn(registry, name) ? registry[name] : undefined;
    if (!definition) {
      return void problems.push({ path: [i], message: `unknown reward function "${name}"; known: ${Object.keys(registry).join(', ')}` });
    }
    const inline = Object.fromEntries(Object.entries(entry).filter(([key]) => !RESERVED.has(key)));
    const parsed = z.strictObject(definition.params).safeParse({ ...inline, ...entry.params });
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        const keys = issue.code === 'unrecognized_keys' ? issue.keys : [issue.path.join('.')];
        const known = Object.keys(definition.params).join(', ') || 'none';
        for (const key of keys) {
          problems.push({
            path: [i, key],
            message:
              issue.code === 'unrecognized_keys'
                ? `${name} has no parameter "${key}" (its parameters: ${known})`
                : `${name}: ${issue.message}`,
          });
        }
      }
      return;
    }
    const metric = entry.metric ?? name;
    if (resolved.some((r) => r.metric === metric)) {
      return void problems.push({ path: [i], message: `a second reward named "${metric}": give one its own "metric"` });
    }
    try {
      resolved.push({
        metric,
        weight: entry.weight ?? 1,
        fn: definition.create(parsed.data),
        needsAnswer: definition.needsAnswer ?? false,
      });
    } catch (error) {
      problems.push({ path: [i], message: `${name}: ${(error as Error).message}` });
    }
  });
  return { resolved, problems };
}

/** A list of reward functions bound to their parameters and weights. */
export interface CombinedReward {
  /** Metric keys, one per function, in list order. */
  metrics: string[];
  /** Some function reads the gold answer. */
  needsAnswer: boolean;
  /** The weighted combination as the score, and each function's own (unweighted) value as a metric. */
  score(context: RewardContext): ScoreResult;
}

/** How {@link combineRewards} adds the rewards up, and where it finds them by name. */
export interface CombineRewardsOptions {
  /** @default 'none' */
  normalization?: RewardNormalization;
  /** @default REWARD_FUNCTIONS */
  registry?: RewardRegistry;
}

/**
 * Binds a reward list: each function made from the registry with its parameters, the score their weighted sum.
 * @throws Error naming every bad entry (`reward_fns[1].ngram_size: …`).
 */
export function combineRewards(specs: readonly RewardSpec[], options: CombineRewardsOptions = {}): CombinedReward {
  const { resolved, problems } = resolve(specs, options.registry ?? REWARD_FUNCTIONS);
  if (problems.length > 0) {
    const where = (path: (string | number)[]) => `reward_fns${path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('')}`;
    throw new Error(`invalid reward functions:\n  ${problems.map((p) => `${where(p.path)}: ${p.message}`).join('\n  ')}`);
  }
  const total = resolved.reduce((sum, r) => sum + r.weight, 0);
  const divisor = options.normalization === 'sum' && total !== 0 ? total : 1;
  return {
    metrics: resolved.map((r) => r.metric),
    needsAnswer: resolved.some((r) => r.needsAnswer),
    score(context) {
      const metrics: Record<string, number> = {};
      let score = 0;
      for (const { metric, weight, fn } of resolved) {
        const value = fn(context);
        metrics[metric] = value;
        score += weight * value;
      }
      return { score: score / divisor, metrics };
    },
  };
}

/**
 * A config field holding a reward list, checked against the registry when the config is resolved, so a bad name or
 * parameter is a config error naming the flag. On the command line it takes JSON (`'["accuracy",{"name":"format"}]'`)
 * or names separated by commas (`accuracy,format`).
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
