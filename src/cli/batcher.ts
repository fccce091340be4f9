import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { batcher, BatcherInput } from '../workflows/batcher.js';
import { BATCHER_TASK_QUEUE } from '../workers/workers.js';
import { canFinish } from '../version.js';
import { recordedVersion, startedBy } from './versions.js';
import { WORKFLOW_TASK_TIMEOUT_MS } from '../workflows/messages.js';

/** Workflow id of the default batcher: one per Temporal namespace unless `--batcher-id` names another. */
export const DEFAULT_BATCHER_ID = 'clotho/batcher/default';

/**
 * Workflow id of training run `run` of the batcher `base`: the first run keeps the base id (so batchers started before
 * runs had numbers are run 1), later ones are `<base>/run-<n>`. Ids are never reused, so every run stays findable.
 */
export function runWorkflowId(base: string, run: number): string {
  return run <= 1 ? base : `${base}/run-${run}`;
}

/** A training run of a batcher: its number and workflow id. */
export interface BatcherRun {
  run: number;
  workflowId: string;
}

/** Whether a workflow id was ever used (a closed run counts: its id is taken). */
export async function runExists(client: Client, workflowId: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/** The newest training run of the batcher `base`: the highest-numbered run id in use (run 1 when none is). */
export async function currentRun(client: Client, base: string): Promise<BatcherRun> {
  let run = 1;
  while (await runExists(client, runWorkflowId(base, run + 1))) run++;
  return { run, workflowId: runWorkflowId(base, run) };
}

/** Starts the batcher workflow unless it already runs (then its state, and its trainer mode, are kept). */
export async function ensureBatcher(client: Client, workflowId: string, input: BatcherInput, searchAttributes: boolean): Promise<void> {
  await client.workflow.start<typeof batcher>('batcher', {
    workflowId,
    taskQueue: BATCHER_TASK_QUEUE,
    args: [input],
    ...startedBy(searchAttributes),
    workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT_MS,
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}

/**
 * Starts the next training run of the batcher `base` after `previous`, which it ends: the new run's batcher tells
 * `previous` to end as its first act, and `previous` tells the env-runs it pushed rooms to, which fail naming it rather
 * than feed a run no trainer reads or wait for room that never comes (`src/workflows/batcher-supersede.ts`). That is all
 * in the workflows, so a kill of this process after the start leaves nothing undone. When another API process started
 * that run first, its run is the one returned.
 */
export async function startNextRun(
  client: Client,
  base: string,
  previous: BatcherRun,
  input: BatcherInput,
  searchAttributes: boolean,
): Promise<BatcherRun> {
  const next = { run: previous.run + 1, workflowId: runWorkflowId(base, previous.run + 1) };
  const reason = `superseded by training run ${next.run} (${next.workflowId})`;
  // A batcher this code cannot replay would fail on the signal: it is terminated first, as it was before runs ended
  // themselves; its env-runs (of its own version) are not told.
  const terminated = await endUnreplayable(client, previous.workflowId, reason);
  if (terminated) {
    console.error(
      `clotho api: training run ${previous.run} (${previous.workflowId}) was started by a Clotho older than the replay baseline: ` +
        'terminated; the env-runs feeding it are not told, stop them by hand',
    );
  }
  try {
    await client.workflow.start<typeof batcher>('batcher', {
      workflowId: next.workflowId,
      taskQueue: BATCHER_TASK_QUEUE,
      args: [terminated ? input : { ...input, supersedes: { batcherId: previous.workflowId, reason } }],
      ...startedBy(searchAttributes),
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT_MS,
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    return currentRun(client, base);
  }
  if (process.env.CLOTHO_TEST_HOLD_AFTER_RUN_START === '1') {
    // Tests only: a kill -9 here is one between the new run's start and everything after it.
    console.log(`clotho api: holding after starting training run ${next.run}`);
    await new Promise(() => {});
  }
  return next;
}

/** Terminates `workflowId` when it runs and recorded a version older than the replay baseline; answers whether it did. */
async function endUnreplayable(client: Client, workflowId: string, reason: string): Promise<boolean> {
  const handle = client.workflow.getHandle(workflowId);
  const description = await handle.describe().catch((error: unknown) => {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  });
  if (description?.status.name !== 'RUNNING' || canFinish(recordedVersion(description))) return false;
  await handle.terminate(reason);
  return true;
}
