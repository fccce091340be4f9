import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { temporal } from '@temporalio/proto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { runTaskQueues } from '../../src/cli/runtime.js';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import { FileSystemStore } from '../../src/store/trajectory-store.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { spawnClotho, waitFor, type CliRun } from '../support/cli.js';
import type { TakeTurnsResult } from '../../src/activities/turn.js';
import { fastSteps, queuedSteps } from '../support/harness.js';
import { assistantTurns, startScriptedOpenAI, type ScriptedBody } from '../support/scripted-openai.js';
import { testConnection, uniqueId } from '../support/temporal.js';

const TURNS = 20;
const KILL_AT = 7;
const envModule = fileURLToPath(new URL('../support/logged-tools-env.ts', import.meta.url));
const workers: CliRun[] = [];
afterAll(() => workers.forEach((w) => w.child.exitCode === null && w.child.kill('SIGKILL')));

type Event = temporal.api.history.v1.IHistoryEvent;

/**
 * The input every test starts its 20-turn group with, on the run's own task queues: each step an activity of its own
 * unless `steps` say otherwise.
 */
function groupInput(runId: string, generateHeartbeatMs: number, steps = queuedSteps()) {
  const queues = runTaskQueues(runId, 'logged-tools');
  // A generation on a dead worker is sent again once its heartbeats stop for this long.
  steps.generate = { ...steps.generate, heartbeatTimeoutMs: generateHeartbeatMs };
  return {
    runId,
    environment: 'logged-tools',
    itemIndex: 0,
    groupSize: 1,
    maxTurns: TURNS,
    maxTokenLength: 100_000,
    sampling: { temperature: 1, topP: 1 },
    ensureScoresAreNotSame: false,
    teacherTopK: null,
    taskQueues: { llm: queues.llm, env: queues.env },
    steps,
    searchAttributes: true,
  };
}

/** Each activity start of a history, with its type, the turn of its input and its attempt. */
async function activityAttempts(workflowId: string) {
  const { client } = await testConnection();
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const scheduled = new Map<number, { type: string; turn: number }>();
  for (const e of events) {
    const attributes = e.activityTaskScheduledEventAttributes;
    if (attributes) scheduled.set(Number(e.eventId), { type: attributes.activityType!.name!, turn: inputOf(e).turn });
  }
  const attempts = events.flatMap((e) => {
    const started = e.activityTaskStartedEventAttributes;
    return started ? [{ ...scheduled.get(Number(started.scheduledEventId))!, attempt: started.attempt ?? 1 }] : [];
  });
  const turnsOf = (type: string) => [...scheduled.values()].filter((s) => s.type === type).map((s) => s.turn);
  return { attempts, turnsOf };
}

/** Activities before turn `killedAt` started once; the generation of that turn started again after the kill. */
function expectOnlyTheKilledTurnRepeated(attempts: { type: string; turn: number; attempt: number }[], killedAt: number) {
  for (const a of attempts) if (a.turn < killedAt) expect(a, `${a.type} of turn ${a.turn}`).toMatchObject({ attempt: 1 });
  expect(attempts.find((a) => a.type === 'generateTurn' && a.turn === killedAt)!.attempt).toBeGreaterThan(1);
}
const inputOf = (event: Event) =>
  JSON.parse(Buffer.from(event.activityTaskScheduledEventAttributes!.input!.payloads![0]!.data!).toString()) as {
    turn: number;
    call?: number;
  };

/**
 * A model that calls the `add` tool every turn but the last, and hangs on the first request of turn KILL_AT (`atKill`
 * resolves then); `asked` lists the turn of every request.
 */
async function modelHangingAtKill() {
  const asked: number[] = [];
  let reachedKill!: () => void;
  const atKill = new Promise<void>((resolve) => (reachedKill = resolve));
  const model = await startScriptedOpenAI({
    responder: (body: ScriptedBody) => {
      const turn = assistantTurns(body);
      asked.push(turn);
      if (turn === KILL_AT && asked.filter((t) => t === KILL_AT).length === 1) {
        reachedKill();
        return { hang: true };
      }
      const text = turn < TURNS - 1 ? '<tool_call>{"name": "add", "arguments": {"x": 1}}</tool_call>' : `The total is ${TURNS - 1}.`;
      return { choices: [{ text }] };
    },
  });
  return { model, asked, atKill };
}

/** Starts `clotho worker` of the logged-tools environment for `runId` against `baseUrl`, its store and call log in `dir`. */
function workerStarter(runId: string, dir: string, baseUrl: string) {
  const env = { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') };
  return () => {
    const worker = spawnClotho(
      [
        'worker',
        envModule,
        '--env.run_id',
        runId,
        '--env.log_path',
        join(dir, 'calls.log'),
        '--openai.base_url',
        baseUrl,
        '--store',
        join(dir, 'store'),
      ],
      env,
    );
    workers.push(worker);
    return worker;
  };
}

/** Kills `first` with SIGKILL, lets a worker started anew finish the group, and stops that one. */
async function killAndFinishElsewhere<T>(first: CliRun, startWorker: () => CliRun, result: () => Promise<T>): Promise<T> {
  first.child.kill('SIGKILL');
  expect(await first.exited).toBe('SIGKILL');
  const second = startWorker();
  const finished = await result();
  second.child.kill('SIGINT');
  await waitFor(() => second.child.exitCode !== null, 30_000, 'the second worker to stop');
  return finished;
}

/**
 * A 20-turn episode with local generation (and local tool calls with `localTools`) killed with SIGKILL at turn KILL_AT
 * finishes on a new worker: local activities hold their workflow task, so the new worker replays from the last one
 * completed and runs the local activities after it again; their records in the store keep the model from being asked
 * twice and the tools from running twice.
 */
async function expectLocalEpisodeSurvivesKill({ localTools }: { localTools: boolean }) {
  const { client } = await testConnection();
  const dir = await mkdtemp(join(tmpdir(), 'clotho-tool-crash-local-'));
  const log = join(dir, 'calls.log');
  const { model, asked, atKill } = await modelHangingAtKill();
  const runId = uniqueId('tool-crash-local');
  const startWorker = workerStarter(runId, dir, model.baseUrl);
  const input = groupInput(runId, 4000);
  input.steps.generate = { ...input.steps.generate, local: true };
  input.steps.tool = { ...input.steps.tool!, local: localTools };
  const workflowId = uniqueId('tool-crash-local-group');
  const first = startWorker();
  // A local generation holds its workflow task: the task's timeout is what hands it to another worker.
  const handle = await client.workflow.start(rolloutGroup, {
    taskQueue: runTaskQueues(runId, 'logged-tools').workflows,
    workflowId,
    args: [input],
    workflowTaskTimeout: '4s',
  });
  await atKill;
  const result = await killAndFinishElsewhere(first, startWorker, () => handle.result());
  await model.close();

  expect(result).toMatchObject({ status: 'scored', turns: TURNS, toolCalls: TURNS - 1, scores: [1] });
  const executed = (await readFile(log, 'utf8')).trim().split('\n');
  expect(new Set(executed).size).toBe(TURNS - 1);
  expect(executed).toHaveLength(TURNS - 1);
  // Each turn was asked of the model once, the one in flight at the kill twice.
  expect(asked).toEqual([
    ...Array.from({ length: KILL_AT + 1 }, (_, t) => t),
    ...Array.from({ length: TURNS - KILL_AT }, (_, t) => KILL_AT + t),
  ]);
  // The generations (and local tool calls) are markers in the history, not activities on a task queue; every tool
  // call activity before the kill started once.
  const { attempts, turnsOf } = await activityAttempts(workflowId);
  expect(turnsOf('generateTurn')).toEqual([]);
  expect(turnsOf('callTool')).toEqual(localTools ? [] : Array.from({ length: TURNS - 1 }, (_, t) => t));
  for (const a of attempts) if (a.turn < KILL_AT) expect(a, `${a.type} of turn ${a.turn}`).toMatchObject({ attempt: 1 });
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const markers = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
  expect(markers.length).toBeGreaterThanOrEqual(localTools ? 2 * TURNS - 1 : TURNS);
  if (localTools) {
    // With nothing but local activities, the killed worker had recorded fewer than the 1 + 3 × KILL_AT it finished
    // (prepare, then generate, tools and step a turn): the new worker ran the others again, tool calls included,
    // and the log above shows that no tool ran twice.
    const timedOut = events.findIndex((e) => e.workflowTaskTimedOutEventAttributes);
    expect(timedOut).toBeGreaterThan(0);
    expect(events.slice(0, timedOut).filter((e) => e.markerRecordedEventAttributes).length).toBeLessThan(1 + 3 * KILL_AT);
  }
}

describe('kill -9 of the worker in the middle of a 20-turn tool episode', () => {
  it('finishes the episode on a restarted worker; earlier turns ran once and no tool call ran twice', async () => {
    const { client } = await testConnection();
    const dir = await mkdtemp(join(tmpdir(), 'clotho-tool-crash-'));
    const log = join(dir, 'calls.log');
    const { model, atKill } = await modelHangingAtKill();
    const runId = uniqueId('tool-crash');
    const startWorker = workerStarter(runId, dir, model.baseUrl);

    const workflowId = uniqueId('tool-crash-group');
    const first = startWorker();
    const handle = await client.workflow.start(rolloutGroup, {
      taskQueue: runTaskQueues(runId, 'logged-tools').workflows,
      workflowId,
      args: [groupInput(runId, 4000)],
    });
    await atKill;
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const executedBeforeRestart = (await readFile(log, 'utf8')).trim().split('\n');
    expect(executedBeforeRestart).toHaveLength(KILL_AT);

    const second = startWorker();
    const result = await handle.result();
    second.child.kill('SIGINT');
    await second.exited;
    await model.close();

    expect(result).toMatchObject({ status: 'scored', turns: TURNS, toolCalls: TURNS - 1, scores: [1] });
    const executed = (await readFile(log, 'utf8')).trim().split('\n');
    expect(executed).toHaveLength(TURNS - 1);
    expect(new Set(executed).size).toBe(TURNS - 1);
    const group = await new FileSystemStore(join(dir, 'store')).get<ScoredDataGroup>(result.group!);
    expect(
      group
        .messages![0]!.filter((m) => m.role === 'tool')
        .map((m) => m.content)
        .at(-1),
    ).toBe(`total ${TURNS - 1}`);

    // The history: every generation and tool call before the kill was scheduled once and started once (attempt 1);
    // only the generation of the turn that was in flight ran again.
    const { attempts, turnsOf } = await activityAttempts(workflowId);
    expect(turnsOf('generateTurn')).toEqual(Array.from({ length: TURNS }, (_, t) => t));
    expect(turnsOf('callTool')).toEqual(Array.from({ length: TURNS - 1 }, (_, t) => t));
    expectOnlyTheKilledTurnRepeated(attempts, KILL_AT);
    await waitFor(() => second.child.exitCode !== null, 30_000, 'the second worker to stop');
  });

  it('does the same with generation as a local activity: no turn before the kill is asked of the model again', async () => {
    await expectLocalEpisodeSurvivesKill({ localTools: false });
  });

  it('does the same with generation and tool calls as local activities: the replay runs them again, and no call runs twice', async () => {
    await expectLocalEpisodeSurvivesKill({ localTools: true });
  });

  it('does the same in the default placement, turns in takeTurns: no turn recorded before the kill asked again, no call run twice', async () => {
    const { client } = await testConnection();
    const dir = await mkdtemp(join(tmpdir(), 'clotho-tool-crash-turns-'));
    const log = join(dir, 'calls.log');
    const { model, asked, atKill } = await modelHangingAtKill();
    const runId = uniqueId('tool-crash-turns');
    const startWorker = workerStarter(runId, dir, model.baseUrl);
    const workflowId = uniqueId('tool-crash-turns-group');
    const first = startWorker();
    const handle = await client.workflow.start(rolloutGroup, {
      taskQueue: runTaskQueues(runId, 'logged-tools').workflows,
      workflowId,
      args: [{ ...groupInput(runId, 4000, fastSteps()), oneActivityPerTurn: true }],
      workflowTaskTimeout: '4s',
    });
    await atKill;
    const result = await killAndFinishElsewhere(first, startWorker, () => handle.result());
    await model.close();

    expect(result).toMatchObject({ status: 'scored', turns: TURNS, toolCalls: TURNS - 1, scores: [1] });
    const executed = (await readFile(log, 'utf8')).trim().split('\n');
    const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const timedOut = events.findIndex((e) => e.workflowTaskTimedOutEventAttributes);
    expect(timedOut).toBeGreaterThan(0);
    const turnsOf = (from: number, to: number) =>
      events
        .slice(from, to)
        .flatMap((e) => e.markerRecordedEventAttributes?.details?.result?.payloads ?? [])
        .map((p) => (JSON.parse(Buffer.from(p.data!).toString()) as TakeTurnsResult).turns)
        .reduce((a, b) => a + b, 0);
    // The turns the killed worker took and its history recorded, and those the new worker read from the store: every
    // turn before the kill (its record written), and only the turn in flight then was asked of the model again.
    const recorded = turnsOf(0, timedOut);
    const resent = asked.length - TURNS;
    const rerun = executed.length - new Set(executed).size;
    console.log(
      `tool crash, default placement: killed at turn ${KILL_AT}; ${recorded} turns in the history before the kill, ` +
        `${KILL_AT - recorded} read back from the store after it; model calls sent again ${resent}, tool calls run again ${rerun}`,
    );
    expect(turnsOf(0, events.length)).toBe(TURNS);
    expect(recorded).toBeLessThan(KILL_AT);
    expect(asked.filter((t) => t === KILL_AT)).toHaveLength(2);
    expect(resent).toBe(1);
    expect(rerun).toBe(0);
    expect(executed).toHaveLength(TURNS - 1);
    // Nothing but the group's own workflow tasks and markers: no activity on a task queue.
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
  });

  it('does the same with the embedded engine generating in the worker process (killed with it)', async () => {
    const { client } = await testConnection();
    const dir = await mkdtemp(join(tmpdir(), 'clotho-tool-crash-engine-'));
    const runId = uniqueId('tool-crash-engine');
    const env = { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') };
    // No --openai.base_url: the worker starts the embedded engine (a generated random-weight model) in its process.
    const startWorker = () => {
      const worker = spawnClotho(
        [
          'worker',
          envModule,
          '--env.run_id',
          runId,
          '--env.log_path',
          join(dir, 'calls.log'),
          '--env.keep_going',
          '--env.max_token_length',
          '100000',
          '--store',
          join(dir, 'store'),
        ],
        env,
      );
      workers.push(worker);
      return worker;
    };
    const workflowId = uniqueId('tool-crash-engine-group');
    const input = { ...groupInput(runId, 4000), sampling: { temperature: 1, topP: 1 }, maxTokenLength: TURNS * 8 };
    const first = startWorker();
    const handle = await client.workflow.start(rolloutGroup, {
      taskQueue: runTaskQueues(runId, 'logged-tools').workflows,
      workflowId,
      args: [input],
    });
    // Kill as soon as the generation of turn KILL_AT is scheduled: the engine is then generating it, or about to.
    await waitFor(async () => (await activityAttempts(workflowId)).turnsOf('generateTurn').includes(KILL_AT), 120_000, `turn ${KILL_AT}`);
    const result = await killAndFinishElsewhere(first, startWorker, () => handle.result());

    expect(result).toMatchObject({ status: 'scored' });
    const group = await new FileSystemStore(join(dir, 'store')).get<ScoredDataGroup>(result.group!);
    const turnsTaken = group.messages![0]!.filter((m) => m.role === 'assistant').length;
    expect(turnsTaken).toBe(result.turns);
    expect(result.turns).toBeGreaterThan(KILL_AT);
    // The sequence is whole: model positions carry their token, every position a logprob.
    expect(group.masks[0]).toHaveLength(group.tokens[0]!.length);
    expect(group.inference_logprobs![0]).toHaveLength(group.tokens[0]!.length);
    const { attempts } = await activityAttempts(workflowId);
    // Turn KILL_AT's generation was on the dead worker (then retried) or not yet taken (then attempt 1 on the new one).
    expect(attempts.some((a) => a.type === 'generateTurn' && a.turn === KILL_AT)).toBe(true);
    for (const a of attempts) if (a.turn < KILL_AT) expect(a, `${a.type} of turn ${a.turn}`).toMatchObject({ attempt: 1 });
  });
});
