// weighted-score.test.ts: the score is the weighted sum, and each named function's value is a metric
import { playEpisode } from 'clotho';
import { expect, it } from 'vitest';
import weightedScore from './weighted-score.js';

const item = { question: 'What is 2 + 2?', answer: '4' };

it('scores the weighted sum of its reward functions, each a metric', async () => {
  const right = await playEpisode(weightedScore, { item, replies: ['It is \\boxed{4}.'] });
  expect(right).toMatchObject({ score: 1.2, metrics: { correct: 1, length: 1, format: 0 } });
  const reasoned = await playEpisode(weightedScore, { item, replies: ['<think>2 + 2</think> \\boxed{4}'] });
  expect(reasoned).toMatchObject({ score: 2.2, metrics: { correct: 1, length: 1, format: 1 } });
  expect(await playEpisode(weightedScore, { item, replies: ['It is \\boxed{5}.'] })).toMatchObject({ score: 0.2, metrics: { correct: 0 } });
});
