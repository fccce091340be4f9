import { existsSync, readdirSync } from 'node:fs';
import { chmod, mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import bugfix from '../../environments/bugfix/index.js';
import { harnessKey, runHarnessRollout, type HarnessRolloutRecord } from '../../src/activities/harness.js';
import type { CallRecord } from '../../src/activities/harness-session.js';
import { runTaskQueues } from '../../src/cli/runtime.js';
import { startedBy } from '../../src/cli/versions.js';
import { ServerConfigSchema } from '../../src/config/schemas.js';
import { loadEnvironmentData } from '../../src/env/loaded.js';
import { resolveEnvConfig } from '../../src/env/testing.js';
import { createServerManager } from '../../src/inference/server-manager.js';
import { loadTokenizer, type Tokenizer } from '../../src/inference/tokenizer.js';
import { miniSweAgent } from '../../src/kits/sandbox/agents.js';
import { FileSystemStore } from '../../src/store/trajectory-store.js';
import { rolloutGroupId } from '../../src/workflows/messages.js';
import type { StepOptionsTable } from '../../src/schema/rollout.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { apiClient, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { recordHistory } from '../support/atropos.js';
import { runClotho, spawnClotho, waitFor, type CliRun } from '../support/cli.js';
import { expectWellFormedGroup } from '../support/groups.js';
import { fastSteps } from '../support/harness.js';
import { runEvaluate, runProcess, useScratch } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';
import { BUGFIX_TASKS, sweResponder } from '../support/scripted-swe-model.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { testConnection, uniqueId } from '../support/temporal.js';

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
  // Installed from PyPI on the first run (about 45 s), while the suite's other files run.
  await miniSweAgent().ensure?.();
}, 300_000);
afterAll(async () => {
  for (const child of children) if (child.child.exitCode === null) child.child.kill('SIGKILL');
  await api?.stop();
});

/** The flags that point the CLI at a scripted model with Qwen's tokenizer. */
const modelFlags = (baseUrl: string) => [
  '--openai.base_url',
  baseUrl,
  '--openai.server_type',
  'openai',
  '--openai.model_name',
  'scripted-model',
  '--openai.tokenizer_name',
  'qwen3',
];

/** A scripted model solving the tasks `solves` says, and the flags that point the CLI at it. */
async function model(solves: Parameters<typeof sweResponder>[1]) {
  const scripted = sweResponder(tokenizer, solves);
  const server = scratch.closeAfter(await startScriptedOpenAI({ responder: scripted.responder }));
  return { flags: modelFlags(server.baseUrl), prompts: scripted.prompts };
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
        '1',
        '--env.ensure_scores_are_not_same',
        'false',
        '--store',
        scratch.path('store'),
      ],
      scratch.path('groups.jsonl'),
      2,
    );
    // Item 0 (solved) and item 1 (left broken), each a group of one rollout of four model calls (the serve test below
    // has a group of two).
    const byItem = [0, 1].map((i) => groups.find((g) => tokenizer.decode(g.tokens[0]!).includes(BUGFIX_TASKS[i]!.statement))!);
    expect(byItem.map((g) => g.scores)).toEqual([[1], [0]]);
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
    expect(prompts.filter(Boolean)).toHaveLength(8);
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

/**
 * Issue 27's crash test: kill -9 of the worker while mini-swe-agent is in the middle of an episode, at a seeded model
 * call. The rollout is retried on a restarted worker: the workspace is written anew, the agent starts again, and its
 * requests that match the recorded ones are answered from the record. So every call is in the finished trajectory
 * once, no recorded call reaches the model again (only the one in flight at the kill, which had no record), and the
 * score and tokens equal an uninterrupted run's with the same scripted model.
 */

const SEED = Number(process.env.CLOTHO_HARNESS_SEED ?? 2027_1127);
/** The scripted episode is four calls (look, edit, test, submit); the kill comes while call KILL_AT waits for the model. */
const CALLS = 4;
const KILL_AT = 1 + (SEED % (CALLS - 1));
const ITEM = 0;

describe(`kill -9 of the worker while mini-swe-agent waits for model call ${KILL_AT} (seed ${SEED})`, () => {
  it('finishes the rollout on a restarted worker, replaying the recorded calls: each call once, none re-sent, the same score', async () => {
    const task = BUGFIX_TASKS[ITEM]!;
    const scripted = sweResponder(tokenizer, () => true);
    // The step of each request the model received, in order; once armed, the first request of step KILL_AT never answers.
    const asked: number[] = [];
    let armed = false;
    let reachedKill!: () => void;
    const atKill = new Promise<void>((resolve) => (reachedKill = resolve));
    const model = await startScriptedOpenAI({
      responder: (body, index) => {
        const step = tokenizer.decode(body.prompt as number[]).split('<|im_start|>assistant').length - 2;
        asked.push(step);
        if (armed && step === KILL_AT && asked.filter((s) => s === KILL_AT).length === 1) {
          reachedKill();
          return { hang: true };
        }
        return scripted.responder(body, index);
      },
    });

    // The uninterrupted run: the same rollout in this process, its records in a store of its own.
    const dir = await mkdtemp(join(tmpdir(), 'clotho-harness-crash-'));
    const reference = await uninterruptedRun(model.baseUrl, join(dir, 'reference'));
    expect(reference.outcome).toMatchObject({ calls: CALLS, replayed: 0, ended: 'exited', check: { passed: true } });
    asked.length = 0;
    armed = true;

    const runId = uniqueId('harness-crash');
    const startWorker = () => {
      const worker = spawnClotho(['worker', 'bugfix', '--env.run_id', runId, ...modelFlags(model.baseUrl), '--store', join(dir, 'store')], {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      });
      children.push(worker);
      return worker;
    };
    const { client } = await testConnection();
    const steps = fastSteps();
    // A rollout on a dead worker is retried once its heartbeats stop for this long.
    steps.harness = { ...steps.harness, heartbeatTimeoutMs: 3000 };
    // The id a run gives its group, which `clotho inspect` takes.
    const workflowId = rolloutGroupId(runId, 'bugfix', ITEM);
    const first = startWorker();
    const handle = await startGroup(runId, steps, { workflowTaskTimeout: '4s' });
    await atKill;
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const second = startWorker();
    const result = await handle.result();
    second.child.kill('SIGINT');
    await waitFor(() => second.child.exitCode !== null, 30_000, 'the restarted worker to stop');
    await model.close();

    // The same score as the uninterrupted run.
    expect(result).toMatchObject({ status: 'scored', scores: [1], turns: CALLS });
    // Every call before the kill reached the model once; the one in flight at the kill twice (it had no record); the
    // restarted agent's earlier calls were answered from the record.
    expect(asked).toEqual([
      ...Array.from({ length: KILL_AT + 1 }, (_, s) => s),
      ...Array.from({ length: CALLS - KILL_AT }, (_, s) => KILL_AT + s),
    ]);
    const store = new FileSystemStore(join(dir, 'store'));
    const address = { runId, environment: 'bugfix', itemIndex: ITEM };
    const record = await store.get<HarnessRolloutRecord>(harnessKey(address, 0, 'result'));
    expect(record.outcome).toMatchObject({ calls: CALLS, replayed: KILL_AT, diverged: [], ended: 'exited', check: { passed: true } });
    // Each call once in the finished trajectory: four answers, and the tokens an uninterrupted run gets.
    expect(record.trajectory.messages.filter((m) => m.role === 'assistant')).toHaveLength(CALLS);
    expect(record.trajectory.tokens).toEqual(reference.trajectory.tokens);
    expect(record.trajectory.masks).toEqual(reference.trajectory.masks);
    expect(record.trajectory.logprobs).toEqual(reference.trajectory.logprobs);
    const calls = await Promise.all(Array.from({ length: CALLS }, (_, k) => store.get<CallRecord>(harnessKey(address, 0, `call-${k}`))));
    expect(calls.map((c) => c.call)).toEqual([0, 1, 2, 3]);
    expect(calls[0]!.summary).toContain(task.statement.slice(0, 40));
    // The rollout's activity ran twice: the killed attempt, and the one that finished it.
    const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const attempts = events.flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : []));
    expect(attempts).toEqual([2]);
    // `clotho inspect` lists the calls: replayed up to the kill, live from the call in flight at it.
    const inspected = await runClotho(['inspect', workflowId, '--store', join(dir, 'store')], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    });
    expect(inspected.stderr).toBe('');
    expect(inspected.code).toBe(0);
    expect(inspected.stdout).toMatch(
      new RegExp(`runHarness sample 0: ${CALLS} model calls \\(${KILL_AT} replayed\\), check passed \\[attempt 2\\]`),
    );
    for (let k = 0; k < CALLS; k++) {
      const how = k < KILL_AT ? 'replayed' : 'live';
      expect(inspected.stdout).toMatch(
        new RegExp(`^\\s+call ${k} · ${how} · \\d+ prompt \\+ \\d+ completion tokens · \\d+ ms · user: `, 'm'),
      );
    }
    expect(inspected.stdout).toMatch(
      new RegExp(
        `outcome: agent mini-swe-agent exit 0 · ended: the agent exited · check passed · ${CALLS} model calls, ${KILL_AT} replayed`,
      ),
    );
    // A harness group's history, with its retried rollout, among the replayed ones (with CLOTHO_RECORD_HISTORIES=1).
    await recordHistory('rollout-group-harness-crash.json', workflowId);
  });
});

/**
 * Issue 38, finding 7: on a fresh worker mini-swe-agent is installed from PyPI (about a minute) by the rollout that
 * first needs it. The rollout's attempt must stay alive meanwhile (one attempt, one install, one agent), not time out
 * every 10 s and start again beside itself.
 */
describe('a fresh worker installing mini-swe-agent inside the rollout (default 10 s heartbeat timeout)', () => {
  it('keeps the first attempt alive through the install: one attempt, one install, one agent, the rollout scored', async () => {
    // The sandbox's user (nobody, under root) reads the venv there, as it reads a checkout's .clotho.
    const home = scratch.path('fresh-home');
    await chmod(scratch.dir, 0o755);
    await mkdir(home, { mode: 0o755 });
    const scripted = sweResponder(tokenizer, () => true);
    // Each start of the agent asks its first call once: the count of agents that ran.
    let agentStarts = 0;
    const model = scratch.closeAfter(
      await startScriptedOpenAI({
        responder: (body, index) => {
          if (tokenizer.decode(body.prompt as number[]).split('<|im_start|>assistant').length === 2) agentStarts++;
          return scripted.responder(body, index);
        },
      }),
    );
    const runId = uniqueId('harness-install');
    // A Clotho home of its own: no mini-swe-agent venv there, so the worker installs one for real.
    const worker = spawnClotho(
      ['worker', 'bugfix', '--env.run_id', runId, ...modelFlags(model.baseUrl), '--store', scratch.path('install-store')],
      {
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('temporalNamespace'),
        CLOTHO_HOME: home,
        CLOTHO_MINI_SWE_AGENT_VENV: '',
      },
      { processGroup: true },
    );
    children.push(worker);
    const { client } = await testConnection();
    const workflowId = rolloutGroupId(runId, 'bugfix', ITEM);
    // The harness step as a run has it: a 10 s heartbeat timeout and 5 attempts.
    const handle = await startGroup(runId, fastSteps());
    const ended = await handle.result().then(
      (result) => ({ result }),
      (error: Error) => ({ error: (error.cause as Error | undefined)?.message ?? error.message }),
    );
    const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const attempts = events.flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : []));
    const installs = worker
      .stderr()
      .split('\n')
      .filter((line) => line.includes('installing mini-swe-agent')).length;
    // With its installs: attempts that timed out may still be installing, which a graceful stop would wait for.
    process.kill(-worker.child.pid!, 'SIGKILL');
    await worker.exited;
    console.log(`fresh install: attempts ${attempts.join(',')}, installs ${installs}, agents started ${agentStarts}`);
    expect({ ended, attempts, installs, agentStarts }).toEqual({
      ended: { result: expect.objectContaining({ status: 'scored', scores: [1] }) },
      attempts: [1],
      installs: 1,
      agentStarts: 1,
    });
    expect(existsSync(join(home, 'mini-swe-agent-venv', 'bin', 'mini'))).toBe(true);
  }, 600_000);
});

/**
 * Issue 38, finding 1: a rollout attempt whose worker can no longer reach Temporal (a network partition) is not told by
 * the server that it timed out, while its agent, its model and the store go on. The SDK's core cancels it itself
 * once no heartbeat has reached the server for the heartbeat timeout and 5 s more (sdk-core's local activity timers,
 * `local_timeout_buffer_for_activities`), and the rollout kills its agent's process group on that cancellation: it
 * writes nothing beside the attempt that finished the rollout elsewhere.
 */
describe('a rollout whose worker loses Temporal mid-episode while its agent and the store go on', () => {
  it('keeps the records of the attempt that finished the rollout; the stale attempt writes nothing more and stops', async () => {
    await chmod(scratch.dir, 0o755);
    const store = scratch.path('partition-store');
    const runId = uniqueId('harness-partition');
    const stepOf = (body: Record<string, unknown>) => tokenizer.decode(body.prompt as number[]).split('<|im_start|>assistant').length - 2;
    // The cut-off worker's model: its edit is held until the test lets it go, then answered with a wrong edit.
    const wrong = sweResponder(tokenizer, () => false);
    let atEdit!: () => void;
    const reachedEdit = new Promise<void>((resolve) => (atEdit = resolve));
    let letGo!: () => void;
    const released = new Promise<void>((resolve) => (letGo = resolve));
    const staleAsked: number[] = [];
    const staleModel = scratch.closeAfter(
      await startScriptedOpenAI({
        responder: async (body, index) => {
          staleAsked.push(stepOf(body));
          if (stepOf(body) === 1) {
            atEdit();
            await released;
          }
          return wrong.responder(body, index);
        },
      }),
    );
    const liveModel = scratch.closeAfter(await startScriptedOpenAI({ responder: sweResponder(tokenizer, () => true).responder }));
    const proxy = await startTcpProxy(inject('temporalAddress'));
    // Its rollouts' folders in a folder of its own, to see when its attempt has ended.
    const staleTmp = scratch.path('stale-tmp');
    await mkdir(staleTmp, { mode: 0o755 });
    const worker = (model: string, temporal: string, env: Record<string, string> = {}) => {
      const run = spawnClotho(
        ['worker', 'bugfix', '--env.run_id', runId, ...modelFlags(model), '--store', store],
        { TEMPORAL_ADDRESS: temporal, TEMPORAL_NAMESPACE: inject('temporalNamespace'), ...env },
        { processGroup: true },
      );
      children.push(run);
      return run;
    };
    const cutOff = worker(staleModel.baseUrl, proxy.address, { TMPDIR: staleTmp });
    const steps = fastSteps();
    steps.harness = { ...steps.harness, heartbeatTimeoutMs: 3000 };
    const handle = await startGroup(runId, steps);
    await reachedEdit;
    proxy.cut();
    const other = worker(liveModel.baseUrl, inject('temporalAddress'));
    const result = await handle.result();
    const address = { runId, environment: 'bugfix', itemIndex: ITEM };
    const records = async () => {
      const fs = new FileSystemStore(store);
      const result = await fs.get<HarnessRolloutRecord>(harnessKey(address, 0, 'result'));
      const calls = await Promise.all(Array.from({ length: CALLS }, (_, k) => fs.tryGet<CallRecord>(harnessKey(address, 0, `call-${k}`))));
      return { passed: result.outcome.check.passed, calls: result.outcome.calls, texts: calls.map((c) => c?.completion.text) };
    };
    const finished = await records();
    letGo();
    await waitFor(() => readdirSync(staleTmp).every((name) => !name.startsWith('clotho-harness-')), 120_000, 'the cut-off attempt to end');
    const after = await records();
    process.kill(-cutOff.child.pid!, 'SIGKILL');
    other.child.kill('SIGINT');
    await Promise.all([cutOff.exited, other.exited]);

    expect(result).toMatchObject({ status: 'scored', scores: [1] });
    expect(finished).toMatchObject({ passed: true, calls: CALLS });
    // The cut-off attempt's edit was answered after the rollout had finished: nothing it did after is in the store,
    // and it asked nothing more.
    expect(after).toEqual(finished);
    expect(staleAsked).toEqual([0, 1]);
  }, 300_000);
});

/** Starts item ITEM's group of one rollout in run `runId`, with `steps`, as an env-run would. */
async function startGroup(runId: string, steps: StepOptionsTable, options: { workflowTaskTimeout?: string } = {}) {
  const { client } = await testConnection();
  const queues = runTaskQueues(runId, 'bugfix');
  return client.workflow.start(rolloutGroup, {
    taskQueue: queues.workflows,
    workflowId: rolloutGroupId(runId, 'bugfix', ITEM),
    ...options,
    ...startedBy(true),
    args: [
      {
        runId,
        environment: 'bugfix',
        itemIndex: ITEM,
        groupSize: 1,
        maxTurns: 20,
        maxTokenLength: 16_384,
        sampling: { temperature: 1, topP: 1 },
        ensureScoresAreNotSame: false,
        teacherTopK: null,
        taskQueues: { llm: queues.llm, env: queues.env },
        steps,
        searchAttributes: true,
        oneActivityPerTurn: true,
        harness: true,
      },
    ],
  });
}

/** The rollout without Temporal or a kill, through the same code, against the same scripted model. */
async function uninterruptedRun(baseUrl: string, storeDir: string) {
  const manager = createServerManager({
    servers: [ServerConfigSchema.parse({ base_url: baseUrl, server_type: 'openai', model_name: 'scripted-model' })],
  });
  try {
    const env = await loadEnvironmentData(bugfix, resolveEnvConfig(bugfix));
    return await runHarnessRollout(
      { store: new FileSystemStore(storeDir), continuation: () => ({ tokenizer, client: manager }) },
      env,
      {
        runId: 'reference',
        environment: 'bugfix',
        itemIndex: ITEM,
        sample: 0,
        sampling: { temperature: 1, topP: 1 },
        maxTurns: 20,
        maxTokenLength: 16_384,
      },
      { signal: new AbortController().signal, heartbeat: () => undefined },
    );
  } finally {
    manager.stop();
  }
}
