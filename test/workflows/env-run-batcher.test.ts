import { WorkflowFailedError } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import gsm8k from '../../environments/gsm8k/index.js';
import { batcherViewQuery, ingestGroupsUpdate, takeBatchUpdate } from '../../src/workflows/messages.js';
import { envRun } from '../../src/workflows/env-run.js';
import { batcher } from '../../src/workflows/batcher.js';
import { startNextRun } from '../../src/cli/batcher.js';
import { startedBy } from '../../src/cli/versions.js';
import { GSM8K_TEST, gsm8kResponder } from '../support/gsm8k-model.js';
import { startHarness, type Harness } from '../support/harness.js';
import { waitFor } from '../support/cli.js';
import { recordHistory } from '../support/atropos.js';
import { batcherEnvRunInput, startHarnessBatcher } from '../support/batchers.js';
import { settled, uniqueId } from '../support/temporal.js';
import { startBatcherWorker } from '../../src/workers/workers.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/**
 * An env-run of gsm8k groups feeding a batcher with one batch off-policy (max_batches_offpolicy 1 of 4-sample
 * batches: one group at a time waits in the batcher), once its first group is in and it waits for room: the batcher
 * pushes the room the group left and the env-run takes it, so both settle first.
 */
async function waitingForRoom() {
  harness = await startHarness({
    environment: gsm8k,
    envConfig: { data_path: GSM8K_TEST, group_size: 4 },
    responder: gsm8kResponder((_item, sample) => sample === 0),
  });
  const batcherHandle = await startHarnessBatcher(harness);
  const run = await harness.temporal.client.workflow.start(envRun, {
    taskQueue: harness.queues.workflows,
    workflowId: uniqueId('env-run'),
    args: [batcherEnvRunInput(harness, batcherHandle.workflowId)],
    // The Clotho version that started it, as runs record it (a committed history must: test/replay/baseline.ts).
    ...startedBy(false),
  });
  const queued = async () => (await batcherHandle.query(batcherViewQuery)).metrics.waiting['0']?.queued ?? 0;
  await waitFor(
    async () => (await queued()) === 1 && (await settled(batcherHandle)) && (await settled(run)),
    60_000,
    'the first group to reach the batcher, and both workflows to settle',
  );
  return { batcherHandle, run, queued };
}

describe('envRun feeding a batcher on a real dev server', () => {
  it('waits for the batcher to push room, adding no history while the trainer is idle', async () => {
    const { batcherHandle, run, queued } = await waitingForRoom();
    const idleFrom = (await run.describe()).historyLength;
    // An observation window, not a synchronisation: the old env-run polled here, six events a second.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect((await run.describe()).historyLength).toBe(idleFrom);
    expect(await queued()).toBe(1);

    // The trainer takes the batch: the batcher pushes the new room, and the next group goes.
    for (let step = 1; step <= 5; step++) {
      await waitFor(async () => (await queued()) === 1, 60_000, `group ${step} in the batcher`);
      const taken = await batcherHandle.executeUpdate(takeBatchUpdate, { args: [{}] });
      expect(taken).toMatchObject({ status: 'batch', step });
    }
    const result = await run.result();
    expect(result).toMatchObject({ nextItem: 6, delivered: 6, failed: 0 });
    const view = await batcherHandle.query(batcherViewQuery);
    expect(view.metrics.counters.perEnv['0']).toMatchObject({ received: 6, duplicates: 0 });
    // History grows with the groups (about twenty events each: child, signals, workflow tasks), not with waiting.
    expect((await run.describe()).historyLength).toBeLessThan(6 * 25);
    await batcherHandle.terminate();
  });

  it('fails, naming its batcher, when a new training run ends the batcher it waits on for room', async () => {
    const { batcherHandle, run } = await waitingForRoom();
    const { client, address, namespace } = harness!.temporal;
    // What clotho api does on a /register that starts a new run; the new batcher runs on the batchers' queue.
    const worker = await startBatcherWorker({ address, namespace, store: harness!.store });
    const previous = { run: 1, workflowId: batcherHandle.workflowId };
    const next = await startNextRun(client, batcherHandle.workflowId, previous, { trainer: { kind: 'http' } }, false);
    try {
      const failure = await run.result().then(
        () => null,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(WorkflowFailedError);
      expect((failure as WorkflowFailedError).cause?.message).toBe(
        `the batcher this run feeds, ${batcherHandle.workflowId}, was ended (superseded by training run 2 (${next.workflowId})): ` +
          'start the environment again for the new training run',
      );
      // The old batcher ended itself, having told its env-run; the new one told it to as its first act.
      expect(await batcherHandle.result()).toEqual({
        supersededBy: next.workflowId,
        reason: `superseded by training run 2 (${next.workflowId})`,
        watchersTold: 1,
        watchersClosed: 0,
      });
      const newBatcher = client.workflow.getHandle(next.workflowId);
      expect((await newBatcher.query(batcherViewQuery)).metrics.counters.supersessionErrors).toBeUndefined();
      await recordHistory('env-run-batcher-ended.json', run.workflowId);
      await recordHistory('batcher-superseded.json', batcherHandle.workflowId);
      await recordHistory('batcher-superseding.json', next.workflowId);
    } finally {
      await client.workflow.getHandle(next.workflowId).terminate();
      await worker.shutdown();
    }
  });

  it('counts a batcher it was started to supersede that is not there to tell', async () => {
    harness = await startHarness({ environment: gsm8k, envConfig: { data_path: GSM8K_TEST, group_size: 4 } });
    const handle = await harness.temporal.client.workflow.start(batcher, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('batcher'),
      args: [{ trainer: { kind: 'http' }, supersedes: { batcherId: uniqueId('gone'), reason: 'superseded by a test' } }],
    });
    await waitFor(
      async () => (await handle.query(batcherViewQuery)).metrics.counters.supersessionErrors === 1,
      30_000,
      'the failed supersession to be counted',
    );
    await handle.terminate();
  });

  it('stamps a group with the step at which it started, so one that outlived a step bump is stale', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let asked = false;
    const answer = gsm8kResponder((_item, sample) => sample === 0);
    harness = await startHarness({
      environment: gsm8k,
      envConfig: { data_path: GSM8K_TEST, group_size: 4 },
      responder: async (body, call) => {
        asked = true;
        await gate;
        return answer(body, call);
      },
    });
    // Groups more than one step behind the trainer are stale.
    const batcherHandle = await startHarnessBatcher(harness, { maxStaleness: 1 });
    const run = await harness.temporal.client.workflow.start(envRun, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('env-run'),
      args: [
        batcherEnvRunInput(harness, batcherHandle.workflowId, {
          totalGroups: 1,
          sink: { kind: 'batcher', workflowId: batcherHandle.workflowId, envId: 0, maxBatchesOffpolicy: 8, stopAtStep: 100 },
        }),
      ],
    });
    await waitFor(() => asked, 60_000, 'the group to start generating at step 0');
    // Meanwhile the trainer trains three steps on groups from elsewhere.
    for (let step = 1; step <= 3; step++) {
      await batcherHandle.executeUpdate(ingestGroupsUpdate, { args: [[{ id: `other-${step}`, ref: 'r', envId: null, size: 4 }]] });
      expect(await batcherHandle.executeUpdate(takeBatchUpdate, { args: [{}] })).toMatchObject({ status: 'batch', step });
    }
    release();
    expect(await run.result()).toMatchObject({ delivered: 1 });
    await waitFor(
      async () => (await batcherHandle.query(batcherViewQuery)).metrics.counters.perEnv['0']?.received === 1,
      30_000,
      'the group at the batcher',
    );
    // Generated by the policy of step 0, delivered at step 3: stale (stamped at delivery it would have passed).
    expect((await batcherHandle.query(batcherViewQuery)).metrics.counters.perEnv['0']?.dropped).toEqual({ stale: 1 });
    await batcherHandle.terminate();
  });
});
