// weighted-score.ts: the reward as a weighted list of functions, one of them the environment's own
import { defineEnvironment, fromItems, lastBoxed } from 'clotho';

export default defineEnvironment({
  name: 'weighted-score',
  description: 'Small sums answered in \\boxed{}; right, short and well-formed answers score highest',
  config: {},
  load: async () => fromItems([{ question: 'What is 2 + 2?', answer: '4' }]),
  prompt: (item) => [{ role: 'user', content: `${item.question} Put the answer in \\boxed{}.` }],
  parse: (completion) => lastBoxed(completion),
  // #region score
  score: [
    { name: 'correct', weight: 1, reward: ({ item, parsed }) => (parsed === item.answer ? 1 : 0) },
    { name: 'length', weight: 0.2, params: { max_length: 400 } }, // a built-in, by name
    'format',
  ],
  // #endregion score
});
