import { fileURLToPath } from 'node:url';
import { bashAgent, defineEnvironment, fromItems, loadJsonl, miniSweAgent, z } from 'clotho';

const TASKS = fileURLToPath(new URL('./data/tasks.jsonl', import.meta.url));

/** One bug to fix: a tiny Python repository, its tests (failing before the fix), and the fix the tests were checked with. */
export const BugfixTaskSchema = z.object({
  id: z.string(),
  statement: z.string(),
  files: z.record(z.string(), z.string()),
  tests: z.record(z.string(), z.string()),
  fix: z.object({ file: z.string(), find: z.string(), replace: z.string() }),
});
export type BugfixTask = z.infer<typeof BugfixTaskSchema>;

/** What the agent is told: the bug, and how to run the tests. */
export const taskStatement = (task: BugfixTask) =>
  `${task.statement} The repository is your working directory; its tests are ${Object.keys(task.tests).join(', ')} ` +
  '(run them with `python3 -m unittest`). Fix the code, not the tests.';

/**
 * Bugs to fix in tiny Python repositories, by an agent program run as the policy's harness (issue 27): each rollout
 * runs mini-swe-agent (or the plain bash agent) in a sandbox over a fresh copy of the repository, talking to the
 * policy through its own recorded session; +1 when the repository's tests pass afterwards, 0 otherwise.
 */
export default defineEnvironment({
  name: 'bugfix',
  description: 'Tiny Python repositories with a bug each, fixed by an agent program (mini-swe-agent) in a sandbox; +1 when the tests pass',
  config: {
    agent: z.enum(['mini-swe-agent', 'bash']).default('mini-swe-agent').describe('the agent program each rollout runs'),
    agent_seconds: z.number().positive().default(600).describe("wall time of one rollout's agent, in seconds"),
    data_path: z.string().default('').describe('a JSONL file of tasks in the shipped layout (default: the 12 shipped ones)'),
  },
  defaults: { max_turns: 20, group_size: 4, max_token_length: 16384 },

  load: async (config) => fromItems(await loadJsonl(config.data_path || TASKS, BugfixTaskSchema)),

  prompt: (task: BugfixTask) => [{ role: 'user', content: taskStatement(task) }],

  // docs/guide/harness.md shows this region.
  // #region harness
  harness: {
    agent: (config) => {
      const limits = { wallTimeMs: config.agent_seconds * 1000, cpuSeconds: config.agent_seconds };
      return config.agent === 'bash' ? bashAgent({ limits }) : miniSweAgent({ limits });
    },
    workspace: (task) => ({ ...task.files, ...task.tests }),
    task: taskStatement,
    // The tests as shipped, written over whatever the agent made of them.
    check: (task) => ({ command: ['python3', '-m', 'unittest', '-q'], files: task.tests }),
  },

  parse: (_completion, _task, { harness }) => harness?.check.passed ?? false,

  score: ({ parsed, harness }) => ({
    score: parsed ? 1 : 0,
    metrics: {
      passed: parsed ? 1 : 0,
      model_calls: harness?.calls ?? 0,
      replayed_calls: harness?.replayed ?? 0,
      agent_exited: harness?.ended === 'exited' ? 1 : 0,
    },
  }),
  // #endregion harness
});
