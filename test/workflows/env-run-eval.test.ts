import { WorkflowNotFoundError } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import gsm8k from '../../environments/gsm8k/index.js';
import type { EnvRunInput, EvalSchedule } from '../../src/schema/rollout.js';
import { envRunStatusQuery, evaluationId, ingestGroupsUpdate, takeBatchUpdate } from '../../src/workflows/messages.js';
import { envRun } from '../../src/workflows/env-run.js';
import { evaluation } from '../../src/workflows/evaluation.js';
import { waitFor } from '../support/cli.js';
import { GSM8K_TEST, gsm8kResponder } from '../support/gsm8k-model.js';
import { fastSteps, startHarness, type Harness } from '../support/harness.js';
import { openAIError, type Responder } from '../support/scripted-openai.js';
import { batcherEnvRunInput, startHarnessBatcher } from '../support/batchers.js';
import { uniqueId } from '../support/temporal.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A gate the test opens: evaluation requests wait on it, so an evaluation runs for as long as the test says. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * The scripted model: training requests (temperature 1) answer after `trainDelayMs`, sample 0 right, so no group has
 * equal scores; evaluation requests (temperature 0, `clotho evaluate`'s sampling) wait for the current gate and answer
 * item 0 right and item 1 wrong. `active` counts training requests in flight. After `gather(n)`, training requests
 * wait until n of them are in flight at once, then all go on: groups in flight meet at the model whatever their phase.
 */
function model(trainDelayMs = 0) {
  let gathering: { n: number; met: () => void; all: Promise<void> } | null = null;
  const gather = (n: number) => {
    let met!: () => void;
    const all = new Promise<void>((resolve) => (met = resolve));
    gathering = { n, met, all };
  };
  const state = { evalGate: gate(), evalRequests: 0, active: 0, onActive: (_n: number) => undefined as void, gather };
  const train = gsm8kResponder((_item, sample) => sample === 0);
  const evaluate = gsm8kResponder((item) => item === 0);
  const responder: Responder = async (body, call) => {
    if ((body as { temperature?: number }).temperature === 0) {
      state.evalRequests++;
      await state.evalGate.opened;
      return evaluate(body, call);
    }
    state.active++;
    state.onActive(state.active);
    try {
      const waiting = gathering;
      if (waiting && state.active >= waiting.n) {
        gathering = null;
        waiting.met();
      }
      await waiting?.all;
      await new Promise((resolve) => setTimeout(resolve, trainDelayMs));
      return await train(body, call);
    } finally {
      state.active--;
    }
  };
  return { state, responder };
}

function input(
  h: Harness,
  batcherId: string,
  evaluation: Pick<EvalSchedule, 'handling' | 'limitRatio'>,
  overrides: Partial<EnvRunInput>,
): EnvRunInput {
  return batcherEnvRunInput(h, batcherId, {
    totalGroups: 1000,
    evaluation: {
      everySteps: 2,
      ...evaluation,
      run: {
        runId: h.runId,
        environment: 'gsm8k',
        items: 2,
        maxTurns: 1,
        concurrency: 1,
        taskQueue: h.queues.llm,
        activity: { ...fastSteps().generate, startToCloseTimeoutMs: 120_000, heartbeatTimeoutMs: 60_000 },
      },
    },
    ...overrides,
  });
}

/** The trainer takes its next batch (one of this env's groups, once it is there); returns the new step. */
async function nextBatch(handle: Awaited<ReturnType<typeof startHarnessBatcher>>): Promise<number> {
  let step: number | undefined;
  await waitFor(
    async () => {
      const taken = await handle.executeUpdate(takeBatchUpdate, { args: [{}] });
      if (taken.status === 'batch') step = taken.step;
      return step !== undefined;
    },
    60_000,
    'a batch',
  );
  return step!;
}

const exists = (h: Harness, workflowId: string) =>
  h.temporal.client.workflow
    .getHandle(workflowId)
    .describe()
    .then(
      () => true,
      (error: unknown) => {
        if (error instanceof WorkflowNotFoundError) return false;
        throw error;
      },
    );

describe('envRun evaluates every steps_per_eval trainer steps, on a real dev server', () => {
  it('STOP_TRAIN: evaluates at steps 2 and 4 only, launching no training group while an evaluation runs', async () => {
    const { state, responder } = model();
    harness = await startHarness({ environment: gsm8k, envConfig: { data_path: GSM8K_TEST, group_size: 4 }, responder });
    const h = harness;
    const batcherHandle = await startHarnessBatcher(h);
    const run = await h.temporal.client.workflow.start(envRun, {
      taskQueue: h.queues.workflows,
      workflowId: uniqueId('env-run'),
      args: [
        input(
          h,
          batcherHandle.workflowId,
          { handling: 'STOP_TRAIN', limitRatio: 0.5 },
          { sink: { kind: 'batcher', workflowId: batcherHandle.workflowId, envId: 0, maxBatchesOffpolicy: 1, stopAtStep: 5 } },
        ),
      ],
    });
    const status = () => run.query(envRunStatusQuery);
    const trainStep = () => nextBatch(batcherHandle);

    expect(await trainStep()).toBe(1);
    await waitFor(async () => (await status()).evaluation?.seenStep === 1, 30_000, 'the env-run to see step 1');
    expect(await exists(h, evaluationId(h.runId, 'gsm8k', 1))).toBe(false);
    const before = (await status()).nextItem;

    // Step 2 crosses steps_per_eval: the evaluation starts, and in the same turn no training group is launched.
    expect(await trainStep()).toBe(2);
    await waitFor(async () => (await status()).evaluation?.running === 2, 30_000, 'the evaluation at step 2');
    await waitFor(() => state.evalRequests > 0, 30_000, 'the evaluation to ask the model');
    expect((await status()).nextItem).toBe(before);
    // The trainer moves on with another env's group: room again, and still nothing launched while evaluating.
    await batcherHandle.executeUpdate(ingestGroupsUpdate, { args: [[{ id: 'other-1', ref: 'r', envId: null, size: 4 }]] });
    expect(await batcherHandle.executeUpdate(takeBatchUpdate, { args: [{}] })).toMatchObject({ status: 'batch', step: 3 });
    await waitFor(async () => (await status()).evaluation?.seenStep === 3, 30_000, 'the env-run to see step 3');
    expect(await status()).toMatchObject({ nextItem: before, inFlight: 0, evaluation: { running: 2 } });

    // The evaluation ends: its metrics are the env-run's, and training resumes.
    state.evalGate.open();
    await waitFor(async () => (await status()).nextItem > before, 30_000, 'training to resume');
    const first = (await status()).evaluation!.results;
    expect(first).toEqual([{ step: 2, percentCorrect: 0.5, metrics: { items: 2, score: 0, correct: 0.5, answered: 1 } }]);

    // Step 4 crosses again; the run stops at step 5 once that evaluation is done.
    expect(await trainStep()).toBe(4);
    expect(await trainStep()).toBe(5);
    const result = await run.result();
    expect(result.evaluation).toMatchObject({ started: 2, skipped: 0, failed: 0, running: null });
    expect(result.evaluation!.results.map((r) => r.step)).toEqual([2, 4]);
    for (const step of [1, 3, 5]) expect(await exists(h, evaluationId(h.runId, 'gsm8k', step))).toBe(false);
    const evalRun = await h.temporal.client.workflow.getHandle(evaluationId(h.runId, 'gsm8k', 4)).describe();
    expect(evalRun).toMatchObject({ type: 'evaluation', status: { name: 'COMPLETED' } });
    await batcherHandle.terminate();
  });

  it('LIMIT_TRAIN: keeps eval_limit_ratio of max in flight training while the evaluation runs, and all of it after', async () => {
    const { state, responder } = model(150);
    harness = await startHarness({ environment: gsm8k, envConfig: { data_path: GSM8K_TEST, group_size: 4 }, responder });
    const h = harness;
    const batcherHandle = await startHarnessBatcher(h);
    // No backpressure to speak of: only the in-flight limit bounds training.
    const sink = { kind: 'batcher' as const, workflowId: batcherHandle.workflowId, envId: 0, maxBatchesOffpolicy: 1000, stopAtStep: 100 };
    const run = await h.temporal.client.workflow.start(envRun, {
      taskQueue: h.queues.workflows,
      workflowId: uniqueId('env-run'),
      args: [input(h, batcherHandle.workflowId, { handling: 'LIMIT_TRAIN', limitRatio: 0.5 }, { sink })],
    });
    const status = () => run.query(envRunStatusQuery);
    let peak = 0;
    let started = 0;
    state.onActive = (n) => {
      started++;
      peak = Math.max(peak, n);
    };
    try {
      await waitFor(() => peak === 4, 30_000, 'four training groups generating at once');
      // The step counts batches formed: with two or more groups waiting, one take moves it past 2.
      await waitFor(async () => (await status()).delivered >= 2, 30_000, 'two groups at the batcher');
      const step = await nextBatch(batcherHandle);
      expect(step).toBeGreaterThanOrEqual(2);
      await waitFor(async () => (await status()).evaluation?.running === step && state.evalRequests > 0, 30_000, 'the evaluation');

      // Groups already running finish; new ones keep to 4 × 0.5 = 2 while the evaluation waits on its gate.
      await waitFor(async () => (await status()).inFlight <= 2, 30_000, 'training to come down to the limit');
      peak = 0;
      const from = started;
      await waitFor(() => started >= from + 8, 30_000, 'eight more training groups during the evaluation');
      expect(peak).toBeLessThanOrEqual(2);
      expect(peak).toBeGreaterThanOrEqual(1);
      expect((await status()).evaluation).toMatchObject({ running: step, results: [] });

      state.evalGate.open();
      await waitFor(async () => (await status()).evaluation?.results.length === 1, 30_000, 'the evaluation to finish');
      // Four groups in flight again: they meet at the model (two would wait there for ever under the limit).
      peak = 0;
      state.gather(4);
      await waitFor(() => peak === 4, 30_000, 'four training groups at once again');
    } finally {
      await run.terminate();
      await batcherHandle.terminate();
    }
  });

  it('an evaluation retried after a failure goes on from the items its heartbeat recorded', async () => {
    const asked = new Map<string, number>();
    let failed = false;
    const answer = gsm8kResponder((item) => item !== 1);
    harness = await startHarness({
      environment: gsm8k,
      envConfig: { data_path: GSM8K_TEST, group_size: 4 },
      responder: (body, call) => {
        const question = String((body as { messages: { content: string }[] }).messages.at(-1)!.content);
        asked.set(question, (asked.get(question) ?? 0) + 1);
        // The second item's first request fails: the attempt fails after the first item was scored.
        if (asked.size === 2 && !failed) {
          failed = true;
          return { status: 500, body: openAIError('boom', 500) };
        }
        return answer(body, call);
      },
    });
    const h = harness;
    const { run } = input(h, 'none', { handling: 'NONE', limitRatio: 0.5 }, {}).evaluation!;
    const result = await h.temporal.client.workflow.execute(evaluation, {
      taskQueue: h.queues.workflows,
      workflowId: evaluationId(h.runId, 'gsm8k', 7),
      args: [{ ...run, items: 3, step: 7 }],
    });
    expect(result).toEqual({ step: 7, percentCorrect: 2 / 3, metrics: { items: 3, score: 1 / 3, correct: 2 / 3, answered: 1 } });
    // Item 0 once (kept from the failed attempt), item 1 twice (failed, then answered), item 2 once.
    expect([...asked.values()]).toEqual([1, 2, 1]);
  });
});
