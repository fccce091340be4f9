import { createTemporalTrajectoryService } from '../api/temporal-service.js';
import { openStore } from '../store/open-store.js';
import { retentionFor } from '../store/retention.js';
import { startBatcherWorker } from '../workers/workers.js';
import type { BatcherInput } from '../workflows/batcher.js';
import { currentRun, ensureBatcher, runExists, startNextRun, type BatcherRun } from './batcher.js';
import { takeOverStickyQueue } from './sticky.js';
import type { ServiceFlags } from './commands/api.js';
import { openTemporal } from './runtime.js';
import { refuseUnreplayable } from './versions.js';

/**
 * The service behind `clotho api`: the batcher workflow (started if it is not running, its worker run here)
 * and the trajectory store. Killing this process loses nothing; the batcher's state is in Temporal.
 */
export async function createBatcherService(flags: ServiceFlags) {
  const temporal = await openTemporal();
  try {
    const store = openStore(flags.store);
    const retention = retentionFor(store, flags.retention);
    const input: BatcherInput = {
      trainer:
        flags.trainer === 'temporal'
          ? { kind: 'temporal', taskQueue: flags.trainerTaskQueue, heartbeatTimeoutMs: Math.round(flags.trainerHeartbeatTimeout * 1000) }
          : { kind: 'http' },
      options: {
        ...(flags.maxStaleness === undefined ? {} : { maxStaleness: flags.maxStaleness }),
        ...(flags.idempotencyWindow === undefined ? {} : { seenCapacity: flags.idempotencyWindow }),
      },
    };
    // The newest training run of --batcher-id, resumed; or, with --new-run, the next one (unless there is none yet).
    let run: BatcherRun = await currentRun(temporal.client, flags.batcherId);
    const sa = temporal.searchAttributes;
    if (flags.newRun && (await runExists(temporal.client, run.workflowId)))
      run = await startNextRun(temporal.client, flags.batcherId, run, input, sa);
    else {
      // Before this worker polls: a batcher started by a Clotho older than the replay baseline is refused, not replayed.
      await refuseUnreplayable(
        temporal.client,
        `training run ${run.run} of batcher ${flags.batcherId}`,
        run.workflowId,
        'start a new training run (clotho api --new-run)',
      );
      await ensureBatcher(temporal.client, run.workflowId, input, sa);
    }
    const worker = await startBatcherWorker({
      address: temporal.endpoint.address,
      connection: temporal.endpoint.connection,
      namespace: temporal.endpoint.namespace,
      store,
      // With --trainer temporal the batcher's own worker sees the acks: a trained batch's groups are released here.
      ...(retention.onDelivered ? { onTrained: retention.onDelivered } : {}),
    });
    // The batcher may wait on the sticky queue of an API process that died: this one takes it now.
    await takeOverStickyQueue(temporal.client, run.workflowId);
    const startNewRun = async () => {
      run = await startNextRun(temporal.client, flags.batcherId, run, input, sa);
      return run.workflowId;
    };
    return {
      service: createTemporalTrajectoryService({
        client: temporal.client,
        store,
        batcherId: run.workflowId,
        startNewRun,
        maxQueueGroups: flags.maxQueueGroups,
        ...(retention.onDelivered ? { onDelivered: retention.onDelivered } : {}),
      }),
      /** The training run served now, for `clotho api`'s status line. */
      run: () => run,
      async close() {
        await retention.stop();
        await worker.shutdown();
        await temporal.close();
      },
    };
  } catch (error) {
    await temporal.close();
    throw error;
  }
}
