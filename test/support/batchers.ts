import type { EnvRunInput } from '../../src/schema/rollout.js';
import { registerEnvUpdate, registerTrainerUpdate, takeBatchUpdate } from '../../src/workflows/messages.js';
import { batcher, type BatcherInput } from '../../src/workflows/batcher.js';
import type { Harness } from './harness.js';
import { uniqueId } from './temporal.js';
import { startedBy } from '../../src/cli/versions.js';

/** A batcher on the harness's workflow queue with a registered trainer (batches of one 4-sample group) and env 0. */
export async function startHarnessBatcher(h: Harness, options: BatcherInput['options'] = {}) {
  const handle = await h.temporal.client.workflow.start(batcher, {
    taskQueue: h.queues.workflows,
    workflowId: uniqueId('batcher'),
    args: [{ trainer: { kind: 'http' }, options }],
    // The Clotho version that started it, as runs record it (a committed history must: test/replay/baseline.ts).
    ...startedBy(false),
  });
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
        num_steps: 100,
      },
    ],
  });
  await handle.executeUpdate(takeBatchUpdate, { args: [{}] });
  const env = await handle.executeUpdate(registerEnvUpdate, {
    args: [{ max_token_length: 4096, desired_name: 'gsm8k', weight: 1, group_size: 4, min_batch_allocation: null }],
  });
  if (env.status !== 'success') throw new Error('env did not register');
  return handle;
}

/** An env-run of gsm8k groups of 4 on the harness, 4 in flight, feeding env 0 of `batcherId` (one batch off-policy). */
export function batcherEnvRunInput(h: Harness, batcherId: string, overrides: Partial<EnvRunInput> = {}): EnvRunInput {
  return {
    runId: h.runId,
    environment: 'gsm8k',
    totalGroups: 6,
    maxInFlight: 4,
    sink: { kind: 'batcher', workflowId: batcherId, envId: 0, maxBatchesOffpolicy: 1, stopAtStep: 100 },
    group: { ...h.groupInput(0, { groupSize: 4 }) },
    ...overrides,
  };
}
