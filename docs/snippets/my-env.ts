// my-env.ts
import { defineEnvironment, fromItems, z } from 'clotho';

export default defineEnvironment({
  name: 'my-env',
  description: 'Small sums; +1 when the last number of the reply is the answer, --env.wrong_score otherwise',
  config: { wrong_score: z.number().default(-1).describe('score of a wrong or missing answer') },
  load: async () => fromItems([{ question: 'What is 2 + 2?', answer: '4' }, { question: 'What is 3 * 5?', answer: '15' }]),
  prompt: (item) => [{ role: 'user', content: `${item.question} Answer with a number.` }],
  parse: (completion) => completion.match(/-?\d+/g)?.at(-1) ?? null,
  score: ({ parsed, item, config }) => (parsed === item.answer ? 1 : config.wrong_score),
});
