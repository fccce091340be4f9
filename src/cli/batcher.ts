import type { Client } from '@temporalio/client';
import { batcher, type BatcherInput } from '../workflows/batcher.js';
import { BATCHER_TASK_QUEUE } from '../workers/workers.js';

/** Workflow id of the default batcher: one per Temporal namespace unless `--batcher-id` names another. */
export const DEFAULT_BATCHER_ID = 'clotho/batcher/default';

/** Starts the batcher workflow unless it already runs (then its state, and its trainer mode, are kept). */
export async function ensureBatcher(client: Client, workflowId: string, input: BatcherInput): Promise<void> {
  await client.workflow.start(batcher, {
    workflowId,
    taskQueue: BATCHER_TASK_QUEUE,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}
