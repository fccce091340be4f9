import { isGrpcServiceError, type Client } from '@temporalio/client';

/** gRPC's NOT_FOUND status code. */
const NOT_FOUND = 5;

/** Whether a call to Temporal's service failed because what it named is not there (gRPC NOT_FOUND). */
export const isNotFound = (error: unknown): boolean => isGrpcServiceError(error) && error.code === NOT_FOUND;

/**
 * Takes a workflow's next task off the sticky queue of the worker that ran it last (ResetStickyTaskQueue): after a
 * kill -9 nobody polls that queue, and the task would wait out its schedule-to-start timeout (2 s) before a restarted
 * process may take it (issue 25). A live worker that had it cached replays it once; a workflow not there is no error.
 */
export async function takeOverStickyQueue(client: Client, workflowId: string): Promise<void> {
  try {
    await client.workflowService.resetStickyTaskQueue({ namespace: client.options.namespace, execution: { workflowId } });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/**
 * {@link takeOverStickyQueue} for a workflow and its children in flight: an Atropos run's env-run and its groups,
 * whose next tasks (a collect's answer, a group's result) would each wait out the dead command's sticky queue.
 */
export async function takeOverStickyQueues(client: Client, workflowId: string): Promise<void> {
  const { namespace } = client.options;
  const description = await client.workflowService
    .describeWorkflowExecution({ namespace, execution: { workflowId } })
    .catch(() => undefined);
  const children = (description?.pendingChildren ?? []).flatMap((c) => (c.workflowId ? [c.workflowId] : []));
  await Promise.all([workflowId, ...children].map((id) => takeOverStickyQueue(client, id)));
}
