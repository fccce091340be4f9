import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadTokenizer, type Tokenizer } from '../../src/inference/tokenizer.js';
import { apiClient, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { spawnClotho, waitFor, type CliRun } from '../support/cli.js';
import { expectWellFormedGroup } from '../support/groups.js';
import { runEvaluate, runProcess, useScratch } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';
import { BUGFIX_TASKS, sweResponder } from '../support/scripted-swe-model.js';
import { uniqueId } from '../support/temporal.js';

/**
 * The bugfix environment (issue 27) under `process`, `evaluate` and `serve`: every rollout runs mini-swe-agent (its
 * own CLI, installed from PyPI by the environment) in the sandbox against a scripted model that plays its protocol
 * over token-id prompts (look, edit, test, submit), solving some tasks and failing others. Scores come from the tasks'
 * tests run over the workspace afterwards; tokens are the session's exact ones.
 */

const scratch = useScratch('clotho-harness-');
let tokenizer: Tokenizer;
const children: CliRun[] = [];
let api: ApiProcess | undefined;
beforeAll(async () => {
  tokenizer = await loadTokenizer('qwen3');
});
afterAll(async () => {
  for (const child of children) if (child.child.exitCode === null) child.child.kill('SIGKILL');
  await api?.stop();
});

/** A scripted model solving the tasks `solves` says, and the flags that point the CLI at it with Qwen's tokenizer. */
async function model(solves: Parameters<typeof sweResponder>[1]) {
  const scripted = sweResponder(tokenizer, solves);
  const server = scratch.closeAfter(await startScriptedOpenAI({ responder: scripted.responder }));
  const flags = [
    '--openai.base_url',
    server.baseUrl,
    '--openai.server_type',
    'openai',
    '--openai.model_name',
    'scripted-model',
    '--openai.tokenizer_name',
    'qwen3',
  ];
  return { flags, prompts: scripted.prompts };
}

const solvesEvenItems = (task: { id: string }) => BUGFIX_TASKS.findIndex((t) => t.id === task.id) % 2 === 0;

describe('clotho process bugfix', () => {
  it("scores each rollout by the task's tests after mini-swe-agent's episode, with the session's exact tokens", async () => {
    const { flags, prompts } = await model(solvesEvenItems);
    const { groups } = await runProcess(
      [
        'bugfix',
        ...flags,
        '--env.total_steps',
        '2',
        '--env.group_size',
        '2',
        '--env.ensure_scores_are_not_same',
        'false',
        '--store',
        scratch.path('store'),
      ],
      scratch.path('groups.jsonl'),
      2,
    );
    // Item 0 (solved) and item 1 (left broken), each a group of two rollouts of four model calls.
    const byItem = [0, 1].map((i) => groups.find((g) => tokenizer.decode(g.tokens[0]!).includes(BUGFIX_TASKS[i]!.statement))!);
    expect(byItem.map((g) => g.scores)).toEqual([
      [1, 1],
      [0, 0],
    ]);
    for (const group of byItem) {
      const spans = expectWellFormedGroup(group);
      // Four answers, each trained: the look, the edit, the test run and the submission.
      for (const sequence of spans) expect(sequence).toHaveLength(4);
      const text = tokenizer.decode(group.tokens[0]!);
      expect(text).toContain('COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT');
      // mini-swe-agent's own prompt, and the observation of the tests it ran in the sandbox.
      expect(text).toContain('Please solve this issue:');
      expect(text).toMatch(/<returncode>\d+<\/returncode>/);
    }
    expect(prompts.filter(Boolean)).toHaveLength(16);
  });
});

describe('clotho evaluate bugfix', () => {
  it('runs the agent once per item with greedy sampling and averages the checks', async () => {
    const { flags } = await model(solvesEvenItems);
    const { metrics, samples } = await runEvaluate(['bugfix', '--items', '2', ...flags], scratch.path('evals'));
    expect(metrics).toMatchObject({ items: 2, score: 0.5, passed: 0.5, model_calls: 4, replayed_calls: 0, agent_exited: 1 });
    expect(samples.map((s) => [s.itemIndex, s.score])).toEqual([
      [0, 1],
      [1, 0],
    ]);
    expect(samples[0]!.messages.filter((m) => m.role === 'assistant')).toHaveLength(4);
  });
});

describe('clotho serve bugfix', () => {
  it('feeds the trainer a group whose rollouts differ: one fixed the bug, one did not', async () => {
    // The first edit asked of each task fixes it, the second does not: a group's two rollouts score 1 and 0.
    const { flags } = await model((_task, edits) => edits % 2 === 0);
    api = await startApiProcess({ temporalAddress: inject('temporalAddress') });
    const http = apiClient(api.url);
    await http.post('/register', { ...TRAINER, batch_size: 2, num_steps: 1, max_token_len: 16_384 });
    const serve = spawnClotho(
      [
        'serve',
        'bugfix',
        ...flags,
        '--batcher-id',
        api.batcherId,
        '--env.run_id',
        uniqueId('serve-bugfix'),
        '--env.group_size',
        '2',
        '--env.max_batches_offpolicy',
        '1',
        '--env.max_groups_in_flight',
        '1',
        '--store',
        api.store,
      ],
      { TEMPORAL_ADDRESS: inject('temporalAddress') },
    );
    children.push(serve);
    let batch: { scores: number[]; tokens: number[][] }[] | null = null;
    await waitFor(
      async () => {
        batch = (await http.get('/batch')).json.batch as typeof batch;
        return batch !== null || serve.child.exitCode !== null;
      },
      120_000,
      'a batch from clotho serve bugfix',
    );
    expect(serve.stderr()).toBe('');
    const [group] = batch!;
    expect([...group!.scores].sort()).toEqual([0, 1]);
    expect(tokenizer.decode(group!.tokens[0]!)).toContain(BUGFIX_TASKS[0]!.statement);
    // The trainer reached num_steps: serve stops launching, finishes what is in flight, and exits.
    expect(await serve.exited).toBe(0);
    expect(serve.stdout()).toMatch(/delivered \d+ groups; failed 0/);
  });
});
