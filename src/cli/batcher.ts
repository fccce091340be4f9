import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { batcher, BatcherInput } from '../workflows/batcher.js';
import { BATCHER_TASK_QUEUE } from '../workers/workers.js';
import { startedBy } from './versions.js';
import { batcherEndedSignal, batcherWatchersQuery, WORKFLOW_TASK_TIMEOUT_MS } from '../workflows/messages.js';

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
 * Starts the next training run of the batcher `base` after `previous` and ends `previous` (terminated, with the new
 * run's id as the reason). The env-runs it pushed rooms to are told, and fail naming it, rather than feed a run no
 * trainer reads or wait for room that never comes. When another API process started that run first, its run is the
 * one returned.
 */
export async function startNextRun(
  client: Client,
  base: string,
  previous: BatcherRun,
  input: BatcherInput,
  searchAttributes: boolean,
): Promise<BatcherRun> {
  const next = { run: previous.run + 1, workflowId: runWorkflowId(base, previous.run + 1) };
  try {
    await client.workflow.start<typeof batcher>('batcher', {
      workflowId: next.workflowId,
      taskQueue: BATCHER_TASK_QUEUE,
      args: [input],
      ...startedBy(searchAttributes),
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT_MS,
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    return currentRun(client, base);
  }
  const ended = client.workflow.getHandle(previous.workflowId);
  // The env-runs it pushes rooms to are told it ended (a batcher from before the query, or closed already, names none).
  const watchers = await ended.query(batcherWatchersQuery).catch(() => [] as string[]);
  const reason = `superseded by training run ${next.run} (${next.workflowId})`;
  const notFound = (error: unknown) => {
    // Already closed (terminated by hand, say, or an env-run that finished): nothing left to tell.
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  };
  await ended.terminate(reason).catch(notFound);
  await Promise.all(
    watchers.map((id) =>
      client.workflow.getHandle(id).signal(batcherEndedSignal, { batcherId: previous.workflowId, reason }).catch(notFound),
    ),
  );
  return next;
}
