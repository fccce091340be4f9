import { defineEnvironment, fromItems, z } from 'clotho';
import { loadItems, type RlaifItem } from './data.js';
import { judgeRequests, scoreSample, type Response } from './scoring.js';

export type { RlaifItem } from './data.js';
export type { Response } from './scoring.js';

/** What the judge rewards unless `--env.criteria` says otherwise. */
export const DEFAULT_CRITERIA =
  'It does what the user asked, correctly and completely; it is clear and natural to read, no longer than it needs ' +
  'to be, and honest about what it does not know.';

/**
 * RLAIF: the policy answers a conversation; a judge model compares the answers pairwise, in both orders and with
 * several votes; each answer's score is its share of the judge's preference, centred on zero.
 */
export default defineEnvironment({
  name: 'rlaif',
  description:
    'RLAIF: answers to chat prompts (e.g. WildChat) compared pairwise by a judge model (--judge.*), forward and reversed; score = preference share − 0.5',
  config: {
    data_path: z.string().nullable().default(null).describe('JSONL or Parquet file of prompts (e.g. a WildChat shard); required'),
    prompt_field: z
      .string()
      .min(1)
      .default('conversation')
      .describe('column holding a prompt string or a conversation (list of {role, content})'),
    reference_field: z
      .string()
      .nullable()
      .default(null)
      .describe("column holding a reference answer; None: the conversation's final assistant turn"),
    system_prompt: z.string().nullable().default(null).describe("system message given to the policy, replacing the conversation's own"),
    criteria: z.string().min(1).default(DEFAULT_CRITERIA).describe('what the judge rewards'),
    compare: z
      .enum(['pairs', 'reference'])
      .default('pairs')
      .describe('judge each pair of samples, or each sample against the reference answer'),
    judge_votes: z.number().int().positive().default(3).describe('judge verdicts per comparison and order'),
    judge_max_tokens: z.number().int().positive().default(4096).describe('tokens the judge may use per verdict'),
    judge_temperature: z.number().min(0).default(1).describe('judge sampling temperature (above 0 so votes can differ)'),
  },
  defaults: { group_size: 2 },

  async load(config) {
    if (!config.data_path) {
      throw new Error(
        '--env.data_path: rlaif needs a JSONL or Parquet file of prompts (Atropos used allenai/WildChat; see environments/rlaif/README.md)',
      );
    }
    const items = await loadItems(config.data_path, { promptField: config.prompt_field, referenceField: config.reference_field });
    if (config.compare === 'reference') {
      const missing = items.findIndex((item) => item.reference === null);
      if (missing >= 0) throw new Error(`--env.compare reference: row ${missing + 1} of ${config.data_path} has no reference answer`);
    }
    return fromItems(items);
  },

  prompt: (item: RlaifItem, config) =>
    config.system_prompt === null
      ? item.prompt
      : [{ role: 'system', content: config.system_prompt }, ...item.prompt.filter((m) => m.role !== 'system')],

  parse: (completion, _item, { finishReason }): Response => ({ text: completion, truncated: finishReason === 'length' }),

  judge: ({ item, parsed, config }) => judgeRequests(item, parsed, config),

  score: ({ sample, parsed, judgements, config }) => scoreSample(sample, parsed, judgements, config.compare),
});
