import { fileURLToPath } from 'node:url';
import { defineEnvironment, extractMathAnswer, fromItems, goldMathAnswer, loadJsonl, mathAnswersEqual, resolveDataset, z } from 'clotho';

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

/** The test split as it ships with Clotho: byte for byte the public `test.jsonl` (see `data/README.md`). */
export const GSM8K_TEST_FILE = fileURLToPath(new URL('./data/test.jsonl', import.meta.url));

/** The gold answer of a worked solution: the number on its last `#### n` line (`1,234` is 1234); NaN without one. */
export const goldAnswer = (solution: string): number =>
  /^####/m.test(solution) ? Number(goldMathAnswer(solution)!.replace(/,/g, '')) : NaN;

// A line of the data set; a solution whose `#### n` line does not parse is a data error, reported at load.
const RowSchema = z.object({
  question: z.string().min(1),
  answer: z.string().refine((solution) => Number.isFinite(goldAnswer(solution)), 'no "#### <number>" line'),
});

export const SYSTEM_PROMPT =
  'You are a careful math tutor. Think through the problem step by step, showing your reasoning, ' +
  'then give the final answer as a single number in \\boxed{}, for example \\boxed{42}.';

/** Grade-school math word problems; +1 for the right final number, −1 otherwise. */
export default defineEnvironment({
  name: 'gsm8k',
  description: 'Grade-school math word problems (GSM8K); reward +1 for the right final answer in \\boxed{}, -1 otherwise',
  config: {
    data_path: z
      .string()
      .nullable()
      .default(null)
      .describe('JSONL file of {question, answer}; unset: the split, shipped (test) or downloaded into the cache (train)'),
    split: z
      .enum(['train', 'test'])
      .default('train')
      .describe('split to read when no data_path is given: test ships with Clotho, train is downloaded once'),
  },
  defaults: { group_size: 8, max_token_length: 1024 },

  async load(config) {
    const path = await resolveDataset({
      path: config.data_path ?? (config.split === 'test' ? GSM8K_TEST_FILE : null),
      cacheName: `gsm8k-${config.split}.jsonl`,
      url: GSM8K_URLS[config.split],
    }).catch((error: Error) => {
      if (config.data_path !== null) throw error;
      // The train split could not be downloaded: name the split that needs no network, but never swap it in unasked.
      throw new Error(`${error.message}, or --env.split test to use the test split, which ships with Clotho`);
    });
    const rows = await loadJsonl(path, RowSchema);
    if (rows.length === 0) throw new Error(`no GSM8K problems in ${path}`);
    const items: Gsm8kItem[] = rows.map((row) => ({ question: row.question, answer: goldAnswer(row.answer) }));
    return fromItems(items);
  },

  prompt: (item) => [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: item.question },
  ],

  // The last \boxed{} after any reasoning block, else the last number; an empty box or an open <think> is no answer.
  parse: (completion) => extractMathAnswer(completion) || null,

  score({ item, parsed }) {
    const correct = mathAnswersEqual(parsed, item.answer);
    return { score: correct ? 1 : -1, metrics: { correct: correct ? 1 : 0, answered: parsed === null ? 0 : 1 } };
  },
});
