import { playEpisode, resolveEnvConfig } from 'clotho';
import { describe, expect, it } from 'vitest';
import lowercase, { lowercaseShare, SYSTEM_PROMPT, TOPICS } from './index.js';

describe('lowercase', () => {
  it('scores the share of plain lowercase words', () => {
    expect(lowercaseShare('the sea is calm')).toBe(1);
    expect(lowercaseShare('The sea is calm.')).toBe(0.5);
    expect(lowercaseShare('retVal 42 ☀ acct')).toBe(0.25);
    expect(lowercaseShare('  \n ')).toBe(0);
  });

  it('asks about each topic in turn and scores a whole episode', async () => {
    const source = await lowercase.load(resolveEnvConfig(lowercase));
    expect(source.size).toBe(TOPICS.length);
    const item = source.get(1);
    const { score, metrics, messages } = await playEpisode(lowercase, { item, replies: ['a cat sleeps Here'] });
    expect(messages.slice(0, 2)).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: 'Write about a cat.' },
    ]);
    expect(score).toBe(0.75);
    expect(metrics).toMatchObject({ lowercase_share: 0.75, words: 4 });
  });

  it('takes its topics from the config and refuses an empty list', async () => {
    const source = await lowercase.load(resolveEnvConfig(lowercase, ['--env.topics', '["tea"]']));
    expect(source.get(0)).toEqual({ topic: 'tea' });
    expect(() => resolveEnvConfig(lowercase, ['--env.topics', '[]'])).toThrow('--env.topics');
  });
});
