import { choiceLetters, defineEnvironment, extractChoiceLetter, fromItems, lengthPenalty, resolveDataset, z } from 'clotho';
import { loadMmlu, MMLU_SPLITS, MMLU_URLS, type McqaItem } from './mmlu.js';

export type { McqaItem } from './mmlu.js';

export const SYSTEM_PROMPT =
  'Answer the multiple choice question. Think it through if you need to, then end your reply with ' +
  '"The answer is (X)", where X is the letter of the correct choice.';

/** The user turn: the subject, the question, the lettered choices, and what to answer with. */
export function questionText(item: McqaItem): string {
  const letters = choiceLetters(item.choices.length);
  const about = item.subject ? ` about ${item.subject.replace(/_/g, ' ')}` : '';
  const choices = item.choices.map((choice, i) => `${letters[i]}. ${choice}`).join('\n');
  const which = `${letters.slice(0, -1).join(', ')} or ${letters.at(-1)}`;
  return `The following is a multiple choice question${about}.\n\n${item.question}\n\n${choices}\n\nAnswer with the letter of the correct choice: ${which}.`;
}

/** The metric name of a subject's accuracy: `accuracy_high_school_physics`; null for an item without a subject. */
export function subjectMetric(subject: string): string | null {
  const key = subject
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');
  return key ? `accuracy_${key}` : null;
}

// "anatomy,virology" from a flag, a YAML list, or None for all.
const Subjects = z
  .union([
    z.string().transform((text) =>
      text
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
    z.array(z.string()),
    z.null(),
  ])
  .pipe(z.array(z.string().min(1)).min(1).nullable());

/** MMLU-style multiple choice: +1 for the right letter, −1 for a wrong, missing, ambiguous or cut-off one. */
export default defineEnvironment({
  name: 'mcqa',
  description:
    "MMLU-style multiple choice (original CSVs or the hub's cais/mmlu); +1 for the right letter, -1 otherwise, length penalty when a whole group is right",
  config: {
    data_path: z
      .string()
      .nullable()
      .default(null)
      .describe("CSV, JSONL or Parquet file, or a directory of <subject>_<split>.csv; unset: download cais/mmlu's split"),
    split: z.enum(MMLU_SPLITS).default('test').describe('which <subject>_<split>.csv files of a directory, or which split to download'),
    subjects: Subjects.default(null).describe('comma-separated subjects to keep (all when unset)'),
    format: z.enum(['auto', 'csv', 'jsonl', 'parquet']).default('auto').describe('format of a data_path file (auto: from its extension)'),
    length_penalty: z
      .enum(['threshold', 'relative', 'none'])
      .default('threshold')
      .describe('how a group whose answers are all right is rescored by length (see README)'),
    length_threshold_ratio: z
      .number()
      .min(0)
      .max(1)
      .default(0.5)
      .describe('share of max_token_length free of penalty under the threshold rule'),
  },
  defaults: { group_size: 8 },

  async load(config) {
    const path = config.data_path ?? (await resolveDataset({ cacheName: `mmlu-${config.split}.parquet`, url: MMLU_URLS[config.split] }));
    const items = await loadMmlu({
      path,
      format: config.data_path ? config.format : 'parquet',
      split: config.split,
      subjects: config.subjects,
    });
    return fromItems(items);
  },

  prompt: (item) => [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: questionText(item) },
  ],

  parse: (completion, item) => extractChoiceLetter(completion, choiceLetters(item.choices.length)),

  score({ item, parsed, finishReason }) {
    // A reply cut off by the token budget has no answer, whatever it said before the cut.
    const letter = finishReason === 'length' ? null : parsed;
    const accuracy = letter === choiceLetters(item.choices.length)[item.answer] ? 1 : 0;
    const perSubject = subjectMetric(item.subject);
    return {
      score: accuracy ? 1 : -1,
      metrics: { accuracy, ...(perSubject ? { [perSubject]: accuracy } : {}), invalid: letter === null ? 1 : 0 },
    };
  },

  rescoreGroup({ scores, completionTokens, config }) {
    if (config.length_penalty === 'none') return scores;
    return lengthPenalty(scores, completionTokens, {
      rule: config.length_penalty,
      maxTokenLength: config.max_token_length,
      thresholdRatio: config.length_threshold_ratio,
    });
  },
});
