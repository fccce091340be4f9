import { z } from 'zod';
import { defineEnvironment } from '../../src/env/define.js';

/**
 * A small multi-turn environment for workflow tests: the model must name a secret number; the environment
 * answers "higher" / "lower" as a tool turn until it is named or the turns run out.
 */
export const guessNumber = defineEnvironment({
  name: 'guess-number',
  description: 'guess a secret number with higher/lower hints',
  config: { secret_base: z.number().int().default(40) },
  async load(config) {
    return { size: 10, get: (i: number) => ({ secret: config.secret_base + i }) };
  },
  prompt: () => [{ role: 'user', content: 'Guess my number between 0 and 100. Answer with a number.' }],
  parse: (completion) => {
    const match = completion.match(/-?\d+/g);
    return match ? Number(match.at(-1)) : null;
  },
  score: ({ parsed, item }) => (parsed === item.secret ? 1 : -1),
  step: ({ messages, item }) => {
    const last = messages.at(-1);
    const guess = Number(String(last?.content ?? '').match(/-?\d+/)?.[0]);
    if (guess === item.secret) return { messages: [], done: true };
    return { messages: [{ role: 'user', content: guess < item.secret ? 'higher' : 'lower' }], done: false };
  },
});

/** A single-turn environment with two fields of its own and defaults of its own, for the config pipeline's tests. */
export const toy = defineEnvironment({
  name: 'toy',
  description: 'a test environment',
  config: {
    split: z.enum(['train', 'test']).default('train').describe('which split to read'),
    data_path: z.string().nullable().default(null),
  },
  defaults: { group_size: 8, max_token_length: 1024 },
  load: async () => ({ size: 1, get: () => 'item' }),
  prompt: () => [],
  parse: (completion) => completion,
  score: () => 0,
});
