import { defineEnvironment, fromItems, z } from 'clotho';

/** One prompt: a topic to write about. */
export interface LowercaseItem {
  topic: string;
}

/** Topics of the prompts; item i is topic i mod their count. */
export const TOPICS = [
  'the sea',
  'a cat',
  'rain',
  'bread',
  'a mountain',
  'the moon',
  'a garden',
  'winter',
  'a river',
  'a song',
  'the city',
  'a horse',
  'fire',
  'a book',
  'the wind',
  'a friend',
] as const;

export const SYSTEM_PROMPT = 'Answer in plain lowercase english words, separated by spaces: no capitals, digits or punctuation.';

/** The words of a completion, split on whitespace. */
const wordsOf = (text: string): string[] => text.split(/\s+/).filter(Boolean);

/** A plain lowercase ASCII word. */
const LOWERCASE_WORD = /^[a-z]+$/;

/**
 * Share of the completion's words that are plain lowercase words, in [0, 1]; an empty completion scores 0.
 * Dense enough that even a randomly initialised model scores above 0, which is what a training-loop test needs.
 */
export function lowercaseShare(completion: string): number {
  const words = wordsOf(completion);
  if (words.length === 0) return 0;
  return words.filter((w) => LOWERCASE_WORD.test(w)).length / words.length;
}

/**
 * A format task: write about a topic in lowercase words. The reward is the share of words that comply, so a
 * random policy has a non-zero reward with spread within a group, and a small model learns it in minutes: the
 * environment that `npm run test:trainer` trains on.
 */
export default defineEnvironment({
  name: 'lowercase',
  description: 'A format task: answer in plain lowercase words; reward = share of the words that are (a learning test for trainers)',
  config: {
    topics: z
      .array(z.string().min(1))
      .min(1)
      .default([...TOPICS])
      .describe('topics of the prompts, one item each, repeated'),
  },
  defaults: { group_size: 8, max_token_length: 16 },

  load: async (config) => fromItems<LowercaseItem>(config.topics.map((topic) => ({ topic }))),

  prompt: (item) => [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: `Write about ${item.topic}.` },
  ],

  parse: (completion) => completion,

  score({ completion }) {
    const share = lowercaseShare(completion);
    return { score: share, metrics: { lowercase_share: share, words: wordsOf(completion).length } };
  },
});
