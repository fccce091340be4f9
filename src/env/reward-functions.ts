/**
 * The built-in reward functions of the registry (./rewards.ts). Names and parameters follow Atropos's
 * `atroposlib/envs/reward_fns` where it has the function, and the paper it took the function from where it does not
 * (each says which). They read the completion and, where they need one, the gold answer: the item's `answer`.
 */
import { z } from 'zod';
import { lastBoxed, stripThinking } from './answers.js';
import { goldMathAnswer, lastNumber, mathAnswersEqual } from './math-answer.js';
import type { RewardDefinition, RewardRegistry } from './rewards.js';

const define = <P extends z.ZodRawShape>(definition: RewardDefinition<P>): RewardDefinition<P> => definition;

/** Parameters of the math-aware correctness check, shared by `accuracy` and `cosine_scaled`. */
const CORRECTNESS = {
  tolerance: z.number().min(0).default(1e-6).describe('absolute tolerance of numeric comparison'),
  split_on_think_tag: z.boolean().default(true).describe('read only the text after </think>; an open <think> is no answer'),
  max_boxed_threshold: z.number().int().min(1).default(6).describe('more \\boxed{} than this in the answer is wrong (guessing)'),
  symbolic: z.boolean().default(true).describe('compare expressions with variables by value (2x+1 = 1+2x)'),
};
type Correctness = z.infer<z.ZodObject<typeof CORRECTNESS>>;

/**
 * Whether a completion's final answer (its last `\boxed{}`, else its last number) equals the gold answer, or one of a
 * list of them, by {@link mathAnswersEqual}.
 */
function isCorrect(completion: string, gold: unknown, params: Correctness): boolean {
  const text = params.split_on_think_tag ? stripThinking(completion) : completion;
  if (text === null || (text.match(/\\boxed/g)?.length ?? 0) > params.max_boxed_threshold) return false;
  const given = lastBoxed(text) ?? lastNumber(text);
  const golds = Array.isArray(gold) ? gold : [gold];
  return golds.some((g) => mathAnswersEqual(given, goldMathAnswer(g), params));
}

/** The gold answer as the item holds it (text, a number, a list of accepted answers), null without one. */
const goldOf = (item: unknown): unknown => (typeof item === 'object' && item !== null && 'answer' in item ? item.answer : null);

const UNIT = z.enum(['chars', 'words']).default('chars').describe('what length counts');
const lengthOf = (text: string, unit: 'chars' | 'words') => (unit === 'chars' ? text.length : text.split(/\s+/).filter(Boolean).length);

const accuracy = define({
  name: 'accuracy',
  description: 'correct_reward when the final answer equals the gold answer (math-aware), else incorrect_reward',
  needsAnswer: true,
  params: {
    ...CORRECTNESS,
    correct_reward: z.number().default(1),
    incorrect_reward: z.number().default(0),
  },
  create:
    (params) =>
    ({ completion, item }) =>
      isCorrect(completion, goldOf(item), params) ? params.correct_reward : params.incorrect_reward,
});

// One reasoning block first, then a non-empty answer, and no reasoning after it.
const THINK_THEN_ANSWER = String.raw`^\s*<think>(?:(?!</?think>)[\s\S])*</think>(?:(?!</?think>)[\s\S])*\S(?:(?!</?think>)[\s\S])*$`;

const format = define({
  name: 'format',
  description: '1 when the completion has the expected shape (by default <think>…</think> then an answer), else 0',
  params: {
    pattern: z.string().nullable().default(null).describe('a regular expression the completion must match (search; anchor with ^…$)'),
    preferred_tags: z
      .array(z.string().regex(/^[\w-]+$/))
      .nullable()
      .default(null)
      .describe('Atropos: XML tags, e.g. ["think", "answer"]; 1 when any (or all) of them has a <tag>…</tag> block'),
    require_all_tags: z.boolean().default(false),
    case_sensitive: z.boolean().default(false),
  },
  create(params) {
    const flags = params.case_sensitive ? '' : 'i';
    if (params.preferred_tags) {
      if (params.pattern !== null) throw new Error('give pattern or preferred_tags, not both');
      const tags = params.preferred_tags.map((tag) => new RegExp(`<${tag}>[\\s\\S]*?</${tag}>`, flags));
      return ({ completion }) =>
        (params.require_all_tags ? tags.every((t) => t.test(completion)) : tags.some((t) => t.test(completion))) ? 1 : 0;
    }
    const pattern = new RegExp(params.pattern ?? THINK_THEN_ANSWER, flags); // a bad pattern throws here, reported with its spec
    return ({ completion }) => (pattern.test(completion) ? 1 : 0);
  },
});

const length = define({
  name: 'length',
  description: "1 up to threshold_ratio × max_length, then falling linearly to 0 at max_length (Atropos gsm8k's length penalty)",
  params: {
    max_length: z.number().int().positive().default(1000),
    threshold_ratio: z.number().min(0).max(1).default(0.5).describe('share of max_length that is free of penalty'),
    unit: UNIT,
  },
  create:
    ({ max_length, threshold_ratio, unit }) =>
    ({ completion }) => {
      const size = lengthOf(completion, unit);
      const free = threshold_ratio * max_length;
      if (size <= free) return 1;
      return free >= max_length ? 0 : 1 - Math.min((size - free) / (max_length - free), 1);
    },
});

const repetitionPenalty = define({
  name: 'repetition_penalty',
  description: 'max_penalty × the share of repeated word n-grams (Demystifying Long CoT, appendix C.2): 0 without repetition',
  params: {
    ngram_size: z.number().int().positive().default(3),
    max_penalty: z.number().max(0).default(-1).describe('the value of a completion that is all repetition (≤ 0)'),
  },
  create:
    ({ ngram_size, max_penalty }) =>
    ({ completion }) => {
      const words = completion.toLowerCase().split(/\s+/).filter(Boolean);
      if (words.length < ngram_size) return 0;
      const ngrams = new Set<string>();
      const total = words.length - ngram_size + 1;
      for (let i = 0; i < total; i++) ngrams.add(words.slice(i, i + ngram_size).join(' '));
      const repeated = 1 - ngrams.size / total;
      return repeated === 0 ? 0 : repeated * max_penalty; // not -0
    },
});

const cosineScaled = define({
  name: 'cosine_scaled',
  description:
    'correctness scaled by length on a cosine (Demystifying Long CoT): short right answers earn most, long wrong ones lose least',
  needsAnswer: true,
  params: {
    ...CORRECTNESS,
    min_value_wrong: z.number().default(-1).describe('a wrong answer of length 0'),
    max_value_wrong: z.number().default(-0.5).describe('a wrong answer of max_len or longer'),
    min_value_correct: z.number().default(0.5).describe('a right answer of max_len or longer'),
    max_value_correct: z.number().default(1).describe('a right answer of length 0'),
    max_len: z.number().int().positive().default(1000),
    unit: UNIT,
  },
  create:
    (params) =>
    ({ completion, item }) => {
      const progress = Math.min(lengthOf(completion, params.unit) / params.max_len, 1);
      const cosine = Math.cos(progress * Math.PI);
      // From `start` at length 0 to `end` at max_len: a right answer falls from max to min, a wrong one rises from min to max.
      const [start, end] = isCorrect(completion, goldOf(item), params)
        ? [params.max_value_correct, params.min_value_correct]
        : [params.min_value_wrong, params.max_value_wrong];
      return end + 0.5 * (start - end) * (1 + cosine);
    },
});

/** The built-in registry. */
export const BUILTIN_REWARDS: RewardRegistry = {
  accuracy,
  format,
  length,
  repetition_penalty: repetitionPenalty,
  cosine_scaled: cosineScaled,
};
