import {
  combineRewards,
  defineEnvironment,
  extractMathAnswer,
  fromItems,
  rewardSpecsField,
  z,
  type CombinedReward,
  type Message,
} from 'clotho';
import { loadItems, type DatasetItem } from './data.js';

export type { DatasetItem } from './data.js';

const pattern = z.string().refine((text) => {
  try {
    new RegExp(text);
    return true;
  } catch {
    return false;
  }
}, 'a valid regular expression');

const config = {
  data_path: z
    .string()
    .nullable()
    .default(null)
    .describe('JSONL, CSV or Parquet file of the data set, or an http(s) URL downloaded once into the cache'),
  data_format: z.enum(['jsonl', 'csv', 'parquet']).nullable().default(null).describe('table format; None: from the extension'),
  csv_columns: z.array(z.string()).nullable().default(null).describe('column names of a CSV without a header row'),
  prompt_field: z.string().min(1).default('prompt').describe('column holding the prompt'),
  prompt_template: z
    .string()
    .nullable()
    .default(null)
    .describe('user message with {column} placeholders ({{ and }} for braces); None: the prompt_field as it is'),
  system_prompt: z.string().nullable().default(null).describe('system message before the prompt'),
  format: z
    .enum(['chat', 'completion'])
    .default('chat')
    .describe('chat: system and user turns; completion: one user turn, the system prompt (if any) first'),
  answer_field: z.string().min(1).nullable().default('answer').describe('column holding the gold answer; None: no gold answer'),
  answer_pattern: pattern
    .nullable()
    .default(null)
    .describe('regular expression whose first group is the gold answer in answer_field, e.g. "####\\s*(.+)" for GSM8K'),
  reward_fns: rewardSpecsField(['accuracy']).describe(
    'reward functions: names or {name|type, weight, metric, params} objects (JSON, or names separated by commas)',
  ),
  reward_normalization: z.enum(['none', 'sum']).default('none').describe('none: score = Σ weight × reward; sum: divided by Σ weight'),
  shuffle_seed: z.number().int().nullable().default(null).describe('shuffle the rows with this seed; None: file order'),
};

type Config = z.infer<z.ZodObject<typeof config>>;

// The config's list, bound once per resolved config: the functions are made once, not per trajectory.
const combined = new WeakMap<object, CombinedReward>();
function rewardsOf(cfg: Config): CombinedReward {
  let rewards = combined.get(cfg);
  if (!rewards) combined.set(cfg, (rewards = combineRewards(cfg.reward_fns, { normalization: cfg.reward_normalization })));
  return rewards;
}

/** Any data set in a table, prompted by config and scored by reward functions chosen by name (Atropos's dataset_environment). */
export default defineEnvironment({
  name: 'dataset',
  description:
    'Any JSONL, CSV or Parquet data set: prompts and gold answers from its columns, scored by a weighted list of named reward functions',
  config,

  async load(cfg) {
    if (!cfg.data_path) throw new Error('dataset: pass --env.data_path <file or URL> (JSONL, CSV or Parquet)');
    const rewards = rewardsOf(cfg);
    if (rewards.needsAnswer && cfg.answer_field === null) {
      throw new Error(`dataset: reward functions ${rewards.metrics.join(', ')} read a gold answer; set --env.answer_field`);
    }
    const items = await loadItems({
      dataPath: cfg.data_path,
      format: cfg.data_format,
      csvColumns: cfg.csv_columns,
      promptField: cfg.prompt_field,
      template: cfg.prompt_template,
      answerField: cfg.answer_field,
      answerPattern: cfg.answer_pattern,
      answerRequired: rewards.needsAnswer,
      shuffleSeed: cfg.shuffle_seed,
    });
    return fromItems(items);
  },

  prompt(item: DatasetItem, cfg): Message[] {
    if (cfg.format === 'completion') {
      return [{ role: 'user', content: cfg.system_prompt ? `${cfg.system_prompt}\n\n${item.prompt}` : item.prompt }];
    }
    return [...(cfg.system_prompt ? [{ role: 'system', content: cfg.system_prompt }] : []), { role: 'user', content: item.prompt }];
  },

  // Kept with the trajectory for inspection; the reward functions read the completion themselves.
  parse: (completion) => extractMathAnswer(completion),

  score: (context) => rewardsOf(context.config).score(context),
});
