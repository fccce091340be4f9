// kv-env.ts: a multi-turn environment whose model stores numbers with a tool, then answers in \boxed{}
import { defineEnvironment, defineTool, fromItems, ToolError, z, type ToolContext } from 'clotho';

interface Item {
  question: string;
  answer: string;
}
type State = { kv: Record<string, number> };

const kvSet = defineTool({
  name: 'kv_set',
  description: 'Stores a value under a key',
  parameters: z.object({ key: z.string(), value: z.number() }), // or a JSON Schema object
  execute: ({ key, value }, { state }: ToolContext<Item, State>) => {
    if (key === '') throw new ToolError('empty key'); // the model sees "Error: empty key"
    state.kv[key] = value; // the trajectory's state slot, stored durably
    return `stored ${key}`;
  },
});

export default defineEnvironment({
  name: 'kv-env',
  description: 'Store the sum with kv_set, then answer it in \\boxed{}; +1 when right and stored',
  config: {},
  load: async () => fromItems<Item>([{ question: 'Store 2 + 3 under "sum", then answer it.', answer: '5' }]),
  prompt: (item) => [{ role: 'user', content: item.question }],
  defaults: { max_turns: 10 },
  tools: () => [kvSet],
  initialState: (): State => ({ kv: {} }),
  parse: (completion) => completion.match(/\\boxed\{(.+?)\}/)?.[1] ?? null,
  score: ({ parsed, item, state }) => (parsed === item.answer && state.kv.sum === Number(item.answer) ? 1 : -1),
  step: ({ toolResults }) => ({ messages: [], done: toolResults.length === 0, reward: toolResults.length > 0 ? 0.1 : 0 }),
});
