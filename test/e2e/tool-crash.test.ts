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
import { fastSteps } from '../support/harness.js';
import { assistantTurns, startScriptedOpenAI, type ScriptedBody } from '../support/scripted-openai.js';
import { testConnection, uniqueId } from '../support/temporal.js';

const TURNS = 20;
const KILL_AT = 7;
const envModule = fileURLToPath(new URL('../support/logged-tools-env.ts', import.meta.url));
const workers: CliRun[] = [];
afterAll(() => workers.forEach((w) => w.child.exitCode === null && w.child.kill('SIGKILL')));

type Event = temporal.api.history.v1.IHistoryEvent;
const inputOf = (event: Event) =>
  JSON.parse(Buffer.from(event.activityTaskScheduledEventAttributes!.input!.payloads![0]!.data!).toString()) as { turn: number; call?: number };

describe('kill -9 of the worker in the middle of a 20-turn tool episode', () => {
  it('finishes the episode on a restarted worker; earlier turns ran once and no tool call ran twice', async () => {
    const { client } = await testConnection();
    const dir = await mkdtemp(join(tmpdir(), 'clotho-tool-crash-'));
    const log = join(dir, 'calls.log');
    let reachedKill!: () => void;
    const atKill = new Promise<void>((resolve) => (reachedKill = resolve));
    let hung = false;
    const model = await startScriptedOpenAI({
      responder: (body: ScriptedBody) => {
        const turn = assistantTurns(body);
        if (turn === KILL_AT && !hung) {
          hung = true;
          reachedKill();
          return { hang: true };
        }
        const text = turn < TURNS - 1 ? '<tool_call>{"name": "add", "arguments": {"x": 1}}</tool_call>' : `The total is ${TURNS - 1}.`;
        return { choices: [{ text }] };
      },
    });
    const runId = uniqueId('tool-crash');
    const env = { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') };
    const startWorker = () => {
      const worker = spawnClotho(
        ['worker', envModule, '--env.run_id', runId, '--env.log_path', log, '--openai.base_url', model.baseUrl, '--store', join(dir, 'store')],
        env,
      );
      workers.push(worker);
      return worker;
    };

    const queues = runTaskQueues(runId);
    const steps = fastSteps();
    // A generation on a dead worker is sent again once its heartbeats stop for 4 s.
    steps.generate = { ...steps.generate, heartbeatTimeoutMs: 4000 };
    const workflowId = uniqueId('tool-crash-group');
    const first = startWorker();
    const handle = await client.workflow.start(rolloutGroup, {
      taskQueue: queues.workflows,
      workflowId,
      args: [{
        runId, environment: 'logged-tools', itemIndex: 0, groupSize: 1, maxTurns: TURNS, maxTokenLength: 100_000,
        sampling: { temperature: 1, topP: 1 }, ensureScoresAreNotSame: false, teacherTopK: null,
        taskQueues: { llm: queues.llm, env: queues.env }, steps, searchAttributes: true,
      }],
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
    expect(group.messages![0]!.filter((m) => m.role === 'tool').map((m) => m.content).at(-1)).toBe(`total ${TURNS - 1}`);

    // The history: every generation and tool call before the kill was scheduled once and started once (attempt 1);
    // only the generation of the turn that was in flight ran again.
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
    const of = (type: string) => [...scheduled.values()].filter((s) => s.type === type).map((s) => s.turn);
    expect(of('generateTurn')).toEqual(Array.from({ length: TURNS }, (_, t) => t));
    expect(of('callTool')).toEqual(Array.from({ length: TURNS - 1 }, (_, t) => t));
    for (const a of attempts) {
      if (a.turn < KILL_AT) expect(a, `${a.type} of turn ${a.turn}`).toMatchObject({ attempt: 1 });
    }
    expect(attempts.find((a) => a.type === 'generateTurn' && a.turn === KILL_AT)!.attempt).toBeGreaterThan(1);
    await waitFor(() => second.child.exitCode !== null, 30_000, 'the second worker to stop');
  });
});
