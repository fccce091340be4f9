import { getExternalWorkflowHandle, log, workflowInfo } from '@temporalio/workflow';
import type { RoomWatch } from './batcher-room.js';
import { batcherEndedSignal, supersedeBatcherSignal, type BatcherSuperseded } from './messages.js';

/**
 * Moving to a new training run, durably. The new run's batcher is started with the id of the one it supersedes, and its
 * first act is to tell that one to end (`supersedeBatcherSignal`); the old one tells the env-runs it pushed rooms to
 * (`batcherEndedSignal`: they fail, naming it) and ends. Both are signals issued by workflows, which Temporal delivers
 * whatever becomes of the process that started the new run: once the new batcher has started, nothing is left half done.
 */

/** What a batcher that ended because a new training run superseded it answers. */
export interface BatcherResult {
  /** Workflow id of the new run's batcher. */
  supersededBy: string;
  reason: string;
  /** Env-runs told that this batcher ended, and those that had closed already. */
  watchersTold: number;
  watchersClosed: number;
}

/**
 * The new run's first act: asks `previousId` to end, for `reason`. Answers false, with a warning naming it and why,
 * when it could not be told (closed already, or never there): its env-runs, if any still run, are not told.
 */
export async function supersede(previousId: string, reason: string): Promise<boolean> {
  try {
    await getExternalWorkflowHandle(previousId).signal(supersedeBatcherSignal, { by: workflowInfo().workflowId, reason });
    return true;
  } catch (error) {
    log.warn(`batcher ${previousId}, superseded by ${workflowInfo().workflowId}, could not be told to end; its env-runs are not told`, {
      error: String(error),
    });
    return false;
  }
}

/** The superseded batcher's last act: tells every env-run watching its rooms that it ended, and why. */
export async function endSuperseded(watches: RoomWatch[], superseded: BatcherSuperseded): Promise<BatcherResult> {
  const batcherId = workflowInfo().workflowId;
  const ids = [...new Set(watches.map((w) => w.workflowId))];
  const told = await Promise.all(
    ids.map((id) =>
      getExternalWorkflowHandle(id)
        .signal(batcherEndedSignal, { batcherId, reason: superseded.reason })
        .then(
          () => true,
          (error: unknown) => {
            // A signal to a workflow fails only when it is not running: an env-run that ended has nothing to be told.
            log.info('env-run closed before its batcher ended', { workflowId: id, error: String(error) });
            return false;
          },
        ),
    ),
  );
  const watchersTold = told.filter(Boolean).length;
  return { supersededBy: superseded.by, reason: superseded.reason, watchersTold, watchersClosed: ids.length - watchersTold };
}
