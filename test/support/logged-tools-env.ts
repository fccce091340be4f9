import { appendFileSync } from 'node:fs';
import { defineEnvironment, defineTool, z } from 'clotho';

/**
 * A 20-turn tool episode for crash tests, loaded by `clotho worker` from its path: every call of `add` appends its
 * idempotency key to `--env.log_path` (a side effect outside Clotho), so a test can count how often each call ran.
 */
export default defineEnvironment({
  name: 'logged-tools',
  description: 'count with a tool whose every execution is logged',
  config: {
    log_path: z.string().describe('file each executed call appends its idempotency key to'),
    keep_going: z.boolean().default(false).describe('answer a turn without a tool call with "Keep counting." rather than ending'),
  },
  defaults: { max_turns: 20, group_size: 1 },
  load: async () => ({ size: 1, get: () => ({}) }),
  prompt: () => [{ role: 'user', content: 'Add 1 with the add tool until you are told to stop, then say the total.' }],
  tools: (_, config) => [
    defineTool({
      name: 'add',
      description: 'Adds x to the running total',
      parameters: z.object({ x: z.number() }),
      execute({ x }, context) {
        context.state.total += x;
        appendFileSync(config.log_path, `${context.idempotencyKey}\n`);
        return `total ${context.state.total}`;
      },
    }),
  ],
  // A random-weight model ends a turn at its first space, so that 20 turns fit a small budget (the scripted model
  // ignores stop strings).
  stop: [' '],
  initialState: () => ({ total: 0 }),
  // A random-weight model never writes a tool call: with keep_going its episodes still take every turn.
  step: ({ toolResults }, config) => {
    const answered = toolResults.length === 0;
    return {
      messages: answered && config.keep_going ? [{ role: 'user', content: 'Keep counting.' }] : [],
      done: answered && !config.keep_going,
    };
  },
  parse: (completion) => Number(completion.match(/-?\d+/g)?.at(-1) ?? NaN),
  score: ({ parsed, state }) => (parsed === state.total ? 1 : -1),
});
