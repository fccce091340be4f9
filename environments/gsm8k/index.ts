import { defineEnvironment, loadJsonl, resolveDataset, z } from 'clotho';
import { answersMatch, extractAnswer, goldAnswer, parseNumber } from './answer.js';

/** One GSM8K problem: the question and the number its worked solution ends with. */
export interface Gsm8kItem {
  question: string;
  answer: number;
}

/** Public copies of the data set, one per split (openai/grade-school-math, MIT). */
export const GSM8K_URLS = {
  train: 'https://raw.githubusercontent.com/openai/grade-school-math/master/grade_school_math/data/train.jsonl',
  test: 'https://raw.githubusercontent.com/openai/grade-school-math/master/grade_school_math/data/test.jsonl',
} as const;

// A line of the data set; a solution whose `#### n` line does not parse is a data error, reported at load.
const RowSchema = z.object({
  question: z.string().min(1),
  answer: z.string().refine((solution) => goldAnswer(solution) !== null, 'no "#### <number>" line'),
});

export const SYSTEM_PROMPT =
  'You are a careful math tutor. Think through the problem step by step, showing your reasoning, ' +
  'then give the final answer as a single number in \\boxed{}, for example \\boxed{42}.';

/** Grade-school math word problems; +1 for the right final number, −1 otherwise. */
export default defineEnvironment({
  name: 'gsm8k',
  description: 'Grade-school math word problems (GSM8K); reward +1 for the right final answer in \\boxed{}, -1 otherwise',
  config: {
    data_path: z.string().nullable().default(null)
      .describe('JSONL file of {question, answer}; unset: download the public split into the cache'),
    split: z.enum(['train', 'test']).default('train').describe('split to download when no data_path is given'),
  },
  defaults: { group_size: 8, max_token_length: 1024 },

  async load(config) {
    const path = await resolveDataset({ path: config.data_path, cacheName: `gsm8k-${config.split}.jsonl`, url: GSM8K_URLS[config.split] });
    const rows = await loadJsonl(path, RowSchema);
    if (rows.length === 0) throw new Error(`no GSM8K problems in ${path}`);
    const items: Gsm8kItem[] = rows.map((row) => ({ question: row.question, answer: goldAnswer(row.answer)! }));
    return {
      size: items.length,
      // Indices past the end wrap around: item i is the same on every worker and in every epoch.
      get: (index: number) => items[((index % items.length) + items.length) % items.length]!,
    };
  },

  prompt: (item) => [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: item.question },
  ],

  parse: (completion) => parseNumber(extractAnswer(completion)),

  score({ item, parsed }) {
    const correct = answersMatch(parsed, item.answer);
    return { score: correct ? 1 : -1, metrics: { correct: correct ? 1 : 0, answered: parsed === null ? 0 : 1 } };
  },
});
