import { defineEnvironment, fromItems, z } from 'clotho';
import { parsePrediction, type Prediction } from './answer.js';
import { DEFAULT_DATA_URL, loadRecords, resolveRecordsFile, splitRecords, type FundamentalRecord } from './data.js';
import { promptOf } from './prompt.js';
import { binarise, lengthPenalised, magnitudeScore, predictionScore } from './reward.js';

export type { FundamentalRecord } from './data.js';
export type { Prediction } from './answer.js';
export { SYSTEM_PROMPT } from './prompt.js';

/**
 * Financial fundamentals prediction (Atropos's `fundamental_prediction_environment.py`): from a company's figures,
 * news and macro data, predict whether a fundamental metric will be raised, maintained or reduced, and by how much.
 */
export default defineEnvironment({
  name: 'fundamental_prediction',
  description:
    'Predict whether a company fundamental will be raised, maintained or reduced, and by what percentage ' +
    '(NousResearch/company-fundamentals-prediction-lite); +1 for the right direction, -1 otherwise, as Atropos binarises it',
  config: {
    data_path: z
      .string()
      .nullable()
      .default(null)
      .describe('JSONL or Parquet file of {context, answer, magnitude, fundamental_metric}; unset: download data_url into the cache'),
    data_url: z
      .string()
      .default(DEFAULT_DATA_URL)
      .describe("file to download when no data_path is given (the Hub's Parquet export of the train split)"),
    split: z
      .enum(['train', 'test', 'all'])
      .default('train')
      .describe('records to serve: the training part, the held-out part, or all of them'),
    test_fraction: z.number().min(0).max(1).default(0.05).describe('share of the records held out as the test split'),
    seed: z.number().int().nullable().default(42).describe('seed of the shuffle before the split; None keeps the file order'),
    binary_reward: z
      .boolean()
      .default(true)
      .describe('reward +1 / -1 as Atropos does; false keeps the graded score (0 or 1 + magnitude bonus, minus the length penalty)'),
  },
  // Atropos's config_init: 16 samples, a 16k-token budget, sampling at temperature 0.8.
  defaults: { group_size: 16, max_token_length: 16384, temperature: 0.8 },

  async load(config) {
    const path = await resolveRecordsFile(config.data_path, config.data_url);
    const all = await loadRecords(path);
    const items = splitRecords(all, config.split, config.test_fraction, config.seed);
    if (items.length === 0) {
      throw new Error(`no records in the ${config.split} split of ${path} (${all.length} records, test_fraction ${config.test_fraction})`);
    }
    return fromItems(items);
  },

  prompt: (item: FundamentalRecord) => promptOf(item),

  parse: (completion, item): Prediction | null => parsePrediction(completion, item.fundamental_metric),

  // The graded score; `rescoreGroup` applies the length penalty (it needs token counts) and binarises.
  score({ item, parsed }) {
    const score = predictionScore(parsed, item.answer, item.magnitude);
    const right = parsed !== null && parsed.direction === item.answer;
    return {
      score,
      metrics: {
        direction_accuracy: right ? 1 : 0,
        // Atropos averages the magnitude bonus over right directions only.
        ...(right ? { magnitude_accuracy: magnitudeScore(parsed.magnitude, item.magnitude) } : {}),
        combined_score: score,
        formatted: parsed === null ? 0 : 1,
      },
    };
  },

  rescoreGroup: ({ scores, completionTokens, config }) =>
    scores.map((score, i) => {
      const penalised = lengthPenalised(score, completionTokens[i]!, config.max_token_length);
      return config.binary_reward ? binarise(penalised) : penalised;
    }),
});
