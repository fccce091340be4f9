// kv-env.test.ts: a tool call, its result in the next turn, then the answer
import { playEpisode } from 'clotho';
import { expect, it } from 'vitest';
import kvEnv from './kv-env.js';

it('stores with the tool, then scores the boxed answer', async () => {
  const call = (args: object) => `<tool_call>${JSON.stringify({ name: 'kv_set', arguments: args })}</tool_call>`;
  const item = { question: 'Store 2 + 3 under "sum", then answer it.', answer: '5' };
  const episode = await playEpisode(kvEnv, { item, replies: [call({ key: '', value: 5 }) + call({ key: 'sum', value: 5 }), 'It is \\boxed{5}.'] });
  expect(episode.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['Error: empty key', 'stored sum']);
  expect(episode).toMatchObject({ turns: 2, parsed: '5', score: 1 });
});
