// my-env.test.ts: one episode against scripted replies, in process (no Temporal, no model)
import { playEpisode, resolveEnvConfig } from 'clotho';
import { describe, expect, it } from 'vitest';
import myEnv from './my-env.js';

describe('my-env', () => {
  it('scores the last number of the reply', async () => {
    const item = { question: 'What is 2 + 2?', answer: '4' };
    expect(await playEpisode(myEnv, { item, replies: ['2 + 2 is 4'] })).toMatchObject({ parsed: '4', score: 1 });
    expect(await playEpisode(myEnv, { item, replies: ['5'], argv: ['--env.wrong_score', '0'] })).toMatchObject({ score: 0 });
  });

  it('names a wrong flag', () => {
    expect(() => resolveEnvConfig(myEnv, ['--env.wrong_score', 'x'])).toThrow(/--env\.wrong_score/);
  });
});
