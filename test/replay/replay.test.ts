import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureTemporalCli } from '../../temporal-dev/index.js';
import type { RolloutGroupInput } from '../../src/schema/rollout.js';
import { envRun } from '../../src/workflows/env-run.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { workflowBundle } from '../../src/workers/bundle.js';
import { guessNumber } from '../support/environments.js';
import { fastSteps, startHarness, type Harness } from '../support/harness.js';
import { counterTools } from '../support/counter-tools.js';
import { assistantTurns, openAIError, type Responder } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';
import { startedBy } from '../../src/cli/versions.js';
import { atBaseline } from './baseline.js';

/**
 * Determinism guard: committed histories of real runs, recorded at the replay baseline (REPLAY_BASELINE) or later,
 * must replay against today's workflow code. A change of command order goes behind `patched()` with a history of
 * each path; the release that raises the baseline deletes the branch and records every history anew
 * (CLOTHO_RECORD_HISTORIES=1; ARCHITECTURE.md, "Replay and patches").
 */
const HISTORIES = new URL('./histories/', import.meta.url);
const recording = process.env.CLOTHO_RECORD_HISTORIES === '1';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A workflow's history as the `temporal` CLI prints it: the format Temporal's tools (and the UI's download) use. */
async function historyJson(harness: Harness, workflowId: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    await ensureTemporalCli(),
    ['workflow', 'show', '--workflow-id', workflowId, '--address', harness.temporal.address, '--output', 'json'],
    { maxBuffer: 64 << 20 },
  );
  return stdout;
}

/** Runs one rollout group on the harness to its end and writes its history as `file` among the committed histories. */
async function recordRolloutGroup(running: Harness, file: string, input: RolloutGroupInput): Promise<void> {
  const workflowId = uniqueId(`replay-${file.replace(/\.json$/, '')}`);
  await running.temporal.client.workflow.execute(rolloutGroup, {
    taskQueue: running.queues.workflows,
    workflowId,
    args: [input],
    ...startedBy(true),
  });
  await writeFile(new URL(file, HISTORIES), await historyJson(running, workflowId));
}

/** A model that calls `add` and then `flaky` (which fails its first attempt) in its first turn, and answers in its second. */
const addThenFlaky: Responder = (body) => {
  const text =
    assistantTurns(body) === 0
      ? '<tool_call>{"name": "add", "arguments": {"x": 2}}</tool_call><tool_call>{"name": "flaky", "arguments": {}}</tool_call>'
      : 'The total is 2.';
  return { choices: Array.from({ length: body.n ?? 1 }, () => ({ text })) };
};

describe('replay of recorded histories', () => {
  it.runIf(recording)('records a multi-turn rollout group with a retried generate step', async () => {
    let calls = 0;
    harness = await startHarness({
      environment: guessNumber,
      envConfig: { group_size: 2 },
      responder: (body) => {
        calls++;
        if (calls === 1) return { status: 500, body: openAIError('boom', 500) };
        return { choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: String(calls % 2 === 0 ? 41 + i : 40) })) };
      },
    });
    await recordRolloutGroup(harness, 'rollout-group-one-step-finish.json', harness.groupInput(0, { maxTurns: 3 }));
  });

  it.runIf(recording)('records a tool-using rollout group: setup, tool calls with a retried one, steps, teardown', async () => {
    harness = await startHarness({
      environment: counterTools,
      envConfig: { group_size: 2 },
      responder: addThenFlaky,
    });
    await recordRolloutGroup(
      harness,
      'rollout-group-tools-one-step-finish.json',
      harness.groupInput(0, { maxTurns: 4, hooks: { setup: true, teardown: true } }),
    );
  });

  it.runIf(recording)('records a single-turn group: finishGroup, with no patch marker', async () => {
    harness = await startHarness({
      environment: guessNumber,
      envConfig: { group_size: 2 },
      responder: (body) => ({ choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: i === 0 ? '40' : '7' })) }),
    });
    await recordRolloutGroup(harness, 'rollout-group-single-turn.json', harness.groupInput(0));
  });

  it.runIf(recording)(
    'records a tool-using rollout group with generation as a local activity, retried once, with setup and teardown',
    async () => {
      let calls = 0;
      harness = await startHarness({
        environment: counterTools,
        envConfig: { group_size: 2 },
        responder: (body) => {
          if (++calls === 1) return { status: 503, body: openAIError('overloaded', 503) };
          const text = assistantTurns(body) === 0 ? '<tool_call>{"name": "add", "arguments": {"x": 2}}</tool_call>' : 'The total is 2.';
          return { choices: Array.from({ length: body.n ?? 1 }, () => ({ text })) };
        },
      });
      const input = harness.groupInput(0, { maxTurns: 4, hooks: { setup: true, teardown: true } });
      input.steps.generate = { ...input.steps.generate, local: true };
      await recordRolloutGroup(harness, 'rollout-group-tools-local-generate.json', input);
    },
  );

  it.runIf(recording)('records an env-run that starts the group taking a freed slot before it delivers the finished one', async () => {
    harness = await startHarness({ environment: guessNumber });
    const workflowId = uniqueId('replay-env-run-launch-first');
    const sink = { kind: 'jsonl' as const, path: join(tmpdir(), `${workflowId}.jsonl`) };
    const input = {
      runId: harness.runId,
      environment: guessNumber.name,
      totalGroups: 5,
      maxInFlight: 2,
      sink,
      group: harness.groupInput(0),
    };
    await harness.temporal.client.workflow.execute(envRun, {
      taskQueue: harness.queues.workflows,
      workflowId,
      args: [input],
      ...startedBy(true),
    });
    await writeFile(new URL('env-run-launch-first.json', HISTORIES), await historyJson(harness, workflowId));
    await rm(sink.path, { force: true });
  });

  it.runIf(recording)(
    'records a tool-using rollout group with generation and tool calls as local activities, a flaky call retried',
    async () => {
      harness = await startHarness({
        environment: counterTools,
        envConfig: { group_size: 2 },
        responder: addThenFlaky,
      });
      const input = harness.groupInput(0, { maxTurns: 4, hooks: { setup: true, teardown: true } });
      input.steps.generate = { ...input.steps.generate, local: true };
      input.steps.tool = { ...input.steps.tool!, local: true };
      await recordRolloutGroup(harness, 'rollout-group-tools-local-tools.json', input);
    },
  );

  it.runIf(recording)(
    'records a tool-using group in the default placement: takeTurns, a flaky call retried, setup and teardown',
    async () => {
      // Calls of 1.1 s, so that turn 1 ends the first activity (TURNS_WINDOW_MS) and the history loops: turn 0 calls add
      // and flaky (its first attempt fails the activity, whose retry reads turn 0 back), turn 1 add, turn 2 answers.
      harness = await startHarness({
        environment: counterTools,
        envConfig: { group_size: 2 },
        responder: (body) => {
          const turn = assistantTurns(body);
          const add = '<tool_call>{"name": "add", "arguments": {"x": 2}}</tool_call>';
          const text =
            turn === 0 ? `${add}<tool_call>{"name": "flaky", "arguments": {}}</tool_call>` : turn === 1 ? add : 'The total is 4.';
          return { delayMs: 1100, choices: Array.from({ length: body.n ?? 1 }, () => ({ text })) };
        },
      });
      const input = harness.groupInput(0, {
        maxTurns: 4,
        hooks: { setup: true, teardown: true },
        steps: fastSteps(),
        oneActivityPerTurn: true,
      });
      await recordRolloutGroup(harness, 'rollout-group-take-turns.json', input);
    },
  );

  it.runIf(recording)('records a single-turn group in the default placement: one takeTurns that prepares and finishes it', async () => {
    harness = await startHarness({
      environment: guessNumber,
      envConfig: { group_size: 2 },
      responder: (body) => ({ choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: i === 0 ? '40' : '7' })) }),
    });
    await recordRolloutGroup(
      harness,
      'rollout-group-take-turns-single.json',
      harness.groupInput(0, { steps: fastSteps(), oneActivityPerTurn: true }),
    );
  });

  // The recorders above write the rollout groups and env-run-launch-first.json; test/e2e/serve-weighted.test.ts the
  // weighted batcher and env-run, src/store/retention.test.ts the trained release, test/e2e/atropos-process.test.ts the
  // Atropos workflows, test/e2e/atropos-evaluate.test.ts the Atropos evaluations (all with CLOTHO_RECORD_HISTORIES=1).
  it.each([
    'rollout-group-one-step-finish.json',
    'rollout-group-tools-one-step-finish.json',
    // Generation as a local activity (`--steps.generate.local true`): markers where the others have activity tasks.
    'rollout-group-tools-local-generate.json',
    // Generation and tool calls local (`--steps.tool.local true`): a turn's calls are one callTurnTools marker.
    'rollout-group-tools-local-tools.json',
    // A single-turn group: parse, score and assemble in one finishGroup.
    'rollout-group-single-turn.json',
    // The default placement (`oneActivityPerTurn`): an episode's turns as takeTurns markers, and a single-turn group
    // as one.
    'rollout-group-take-turns.json',
    'rollout-group-take-turns-single.json',
    // A harness group (issue 27): a runHarness per sample, the one killed retried, then gatherHarness and finishGroup
    // (test/e2e/harness.test.ts records it).
    'rollout-group-harness-crash.json',
    // A batcher pushing each env its weighted share of the room.
    'batcher-weighted.json',
    // Launches first, then deliveries: to JSONL here, and to a weighted batcher.
    'env-run-launch-first.json',
    'env-run-weighted-launch-first.json',
    // Waiting for room when a new training run ends its batcher: batcherEnded fails it, naming the batcher
    // (test/workflows/env-run-batcher.test.ts records it).
    'env-run-batcher-ended.json',
    // A --trainer temporal batcher releasing a trained batch (src/store/retention.test.ts records it).
    'batcher-trained-release.json',
    // A new training run's batcher telling the one it supersedes to end, as its first act, and that one telling its
    // env-run and ending (test/workflows/env-run-batcher.test.ts records both).
    'batcher-superseding.json',
    'batcher-superseded.json',
    // Leases renewed, one too late (src/api/temporal-service.test.ts records it).
    'batcher-renewed-leases.json',
    // An Atropos env-run before patched('atropos-run-hooks'): its cursor, declined groups, items put back and served again, deliveries to JSONL; and a
    // scored Atropos group and one failed after a retry (test/e2e/atropos-process.test.ts records them).
    'atropos-env-run-backlog.json',
    // Feeding a batcher: its room pushed, groups signalled with their policy version (test/e2e/atropos-serve.test.ts).
    'atropos-env-run-batcher.json',
    'atropos-rollout-group-scored.json',
    'atropos-rollout-group-failed.json',
    // The same behind patched('atropos-run-hooks'): metrics logged every few groups (the JSONL run); checkpoints, a
    // restore after the Python worker's kill -9, evaluations, logs and drops to the batcher (atropos-serve.test.ts).
    'atropos-env-run-hooks-backlog.json',
    'atropos-env-run-hooks-batcher.json',
    'atropos-env-run-hooks-restored.json',
    // The same behind patched('atropos-cursor-batch') as well: items taken several to a call of atroposNextItem.
    'atropos-env-run-batched-backlog.json',
    'atropos-env-run-batched-batcher.json',
    'atropos-env-run-batched-restored.json',
    // `clotho evaluate --atropos`: one atroposEvaluate, answered, and failed after its retries with the traceback
    // (test/e2e/atropos-evaluate.test.ts records them).
    'atropos-evaluation.json',
    'atropos-evaluation-failed.json',
    // The one env-run loop (issue 38) on the paths only new runs take, the histories above being those it replays as
    // they ran: a group dropped at its deadline (worker_timeout) in envRun (test/workflows/env-run-thinking.test.ts)
    // and in atroposEnvRun (`groupTimeoutSeconds`); items and put-back items as store keys, and a group collecting one;
    // under serve, get_next_item's None asked again after timers of 1, 2 and 4 s (`itemWait`;
    // test/e2e/atropos-process.test.ts and atropos-serve.test.ts record them).
    'env-run-loop-timeout.json',
    'atropos-env-run-loop-timeout.json',
    'atropos-env-run-loop-stored-items.json',
    'atropos-rollout-group-stored-item.json',
    'atropos-env-run-loop-waiting.json',
    // A verifiers run (issue 39): verifiersEnvRun's cursor over the taskset, its groups delivered to JSONL, and a
    // scored verifiersRolloutGroup, one verifiersEpisode per sample, then gatherVerifiers (test/e2e/verifiers-process.test.ts).
    'verifiers-env-run.json',
    'verifiers-rollout-group-scored.json',
  ])('replays %s against the current workflow code', async (name) => {
    const history = JSON.parse(await readFile(new URL(name, HISTORIES), 'utf8')) as { events: unknown[] };
    expect(history.events.length).toBeGreaterThan(5);
    expect(atBaseline(history), `${name} was recorded before the replay baseline: record it anew`).toBe(true);
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, name);
  });
});
