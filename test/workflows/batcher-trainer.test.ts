import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterEach, describe, expect, it } from 'vitest';
import type { TrainStepInput } from '../../src/activities/trainer.js';
import { batcherViewQuery, ingestGroupsUpdate, registerTrainerUpdate } from '../../src/workflows/messages.js';
import { batcher } from '../../src/workflows/batcher.js';
import { workflowBundle } from '../../src/workers/bundle.js';
import { waitFor } from '../support/cli.js';
import { testConnection, uniqueId, uniqueTaskQueue } from '../support/temporal.js';

const trainerScript = fileURLToPath(new URL('../support/heartbeating-trainer.ts', import.meta.url));
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('batcher with --trainer temporal on a real dev server', () => {
  it("hands a dead trainer's batch to another trainer within the heartbeat timeout, and never a live one's", async () => {
    const temporal = await testConnection();
    const workflows = uniqueTaskQueue('batcher');
    const trainerQueue = uniqueTaskQueue('trainer');
    const native = await NativeConnection.connect({ address: temporal.address });
    cleanups.push(() => native.close());
    const batcherWorker = await Worker.create({
      connection: native,
      namespace: temporal.namespace,
      taskQueue: workflows,
      workflowBundle: await workflowBundle(),
    });
    const batcherRun = batcherWorker.run();
    cleanups.push(async () => {
      batcherWorker.shutdown();
      await batcherRun;
    });
    const handle = await temporal.client.workflow.start(batcher, {
      taskQueue: workflows,
      workflowId: uniqueId('batcher'),
      args: [{ trainer: { kind: 'temporal', taskQueue: trainerQueue, heartbeatTimeoutMs: 2_000 } }],
    });
    cleanups.push(() =>
      handle.terminate().then(
        () => undefined,
        () => undefined,
      ),
    );
    await handle.executeUpdate(registerTrainerUpdate, {
      args: [
        {
          wandb_group: 'g',
          wandb_project: 'p',
          batch_size: 4,
          max_token_len: 4096,
          checkpoint_dir: '',
          save_checkpoint_interval: -1,
          starting_step: 0,
          num_steps: 10,
        },
      ],
    });

    // Trainer A, a process of its own, takes the batch and trains on, heartbeating.
    const a = spawn(process.execPath, ['--import', 'tsx', trainerScript, temporal.address, temporal.namespace, trainerQueue], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let aOut = '';
    a.stdout!.on('data', (chunk: Buffer) => (aOut += chunk.toString()));
    const aExited = new Promise((resolve) => a.on('exit', resolve));
    cleanups.push(() => void a.kill('SIGKILL'));
    await handle.executeUpdate(ingestGroupsUpdate, { args: [[{ id: 'group-1', ref: 'store/group-1', envId: null, size: 4 }]] });
    await waitFor(() => aOut.includes('training'), 60_000, 'trainer A to take the batch');
    const taken = JSON.parse(aOut.split('training ')[1]!.split('\n')[0]!) as TrainStepInput;
    expect(taken).toMatchObject({ step: 1, groups: ['store/group-1'] });

    // Trainer B polls too; while A heartbeats, the batch stays with A.
    const received: { input: TrainStepInput; at: number }[] = [];
    const b = await Worker.create({
      connection: native,
      namespace: temporal.namespace,
      taskQueue: trainerQueue,
      activities: { trainStep: async (input: TrainStepInput) => void received.push({ input, at: Date.now() }) },
    });
    const bRun = b.run();
    cleanups.push(async () => {
      b.shutdown();
      await bRun;
    });
    // An observation window of twice the heartbeat timeout, not a synchronisation: a live trainer keeps its batch.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    expect(received).toEqual([]);

    a.kill('SIGKILL');
    await aExited;
    const killedAt = Date.now();
    await waitFor(() => received.length > 0, 30_000, 'trainer B to be handed the batch');
    expect(received[0]!.input).toEqual(taken);
    console.log(`trainer B got the dead trainer's batch ${received[0]!.at - killedAt} ms after the kill (heartbeat timeout 2,000 ms)`);
    // Heartbeat timeout (2 s) plus the retry's backoff and a poll: far below the 2 hours a step may take.
    expect(received[0]!.at - killedAt).toBeLessThan(8_000);
    await waitFor(async () => (await handle.query(batcherViewQuery)).metrics.leasedBatches === 0, 30_000, 'the batch acked');
    expect((await handle.query(batcherViewQuery)).metrics.counters.batchesAcked).toBe(1);
  });
});
