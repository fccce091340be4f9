import { ActivityNotFoundError, ApplicationFailure, type Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { isNotFound } from '../sticky.js';

// A CommonJS package: its namespaces come through the default export.
const { PendingActivityState } = proto.temporal.api.enums.v1;

/** The failure type of an attempt released this way: retryable, so the step's retry policy runs it again. */
export const WORKER_EXITED = 'AtroposWorkerExited';

/** How long the release may take before the command gives up on it (the heartbeat timeouts then hand the work on). */
const RELEASE_TIMEOUT_MS = 5_000;

/** The client calls the release makes (tests pass a fake). */
export type ReleaseClient = Pick<Client, 'workflowService' | 'activity' | 'options' | 'withDeadline'>;

/** What {@link releaseActivitiesOf} did: the attempts it failed, and what it could not do, one line each. */
export interface Released {
  released: number;
  errors: string[];
}

/**
 * Fails, as retryable, every activity attempt that the Python worker named `identity` had started under `workflowId`
 * (an env-run or an evaluation) and its pending children (the groups). The command calls it when the worker it
 * started has exited: nothing will finish those attempts, and each would otherwise hold its group until its heartbeat
 * timeout (10 s) ran out. The next attempt goes to the next worker on the queue after the step's retry interval, as
 * after a timeout. A worker elsewhere keeps its own. An attempt that ended meanwhile is skipped, as is a workflow that
 * is not there; one that a heartbeat timeout handed to another worker in the moment between the look and the failure
 * is failed there and runs once more (its work redone; the group is still delivered once). Any other failure, of a
 * workflow's description or an attempt's release, is an error it answers (those attempts wait for their heartbeat
 * timeout), with how many attempts it failed. `worker` names the worker in the failure (a verifiers run's Python
 * worker is released the same way).
 */
export async function releaseActivitiesOf(
  client: ReleaseClient,
  workflowId: string,
  identity: string,
  reason: string,
  worker = 'the Atropos worker',
): Promise<Released> {
  const { namespace } = client.options;
  const errors: string[] = [];
  const describe = (id: string) =>
    client.workflowService.describeWorkflowExecution({ namespace, execution: { workflowId: id } }).then(
      (description) => ({ id, description }),
      (error: unknown) => {
        if (!isNotFound(error)) errors.push(`describing ${id}: ${(error as Error).message}`);
        return undefined;
      },
    );
  return client.withDeadline(Date.now() + RELEASE_TIMEOUT_MS, async () => {
    const root = await describe(workflowId);
    const children = (root?.description.pendingChildren ?? []).flatMap((c) => (c.workflowId ? [c.workflowId] : []));
    const described = [root, ...(await Promise.all(children.map(describe)))];
    const held = described.flatMap((workflow) =>
      (workflow?.description.pendingActivities ?? [])
        .filter((a) => a.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED && a.lastWorkerIdentity === identity)
        .map((a) => ({ workflowId: workflow!.id, activityId: a.activityId ?? '' })),
    );
    const failure = ApplicationFailure.retryable(`${worker} ${identity} that ran it ${reason}`, WORKER_EXITED);
    const failed = await Promise.all(
      held.map((activity) =>
        client.activity.fail(activity, failure).then(
          () => true,
          (error: unknown) => {
            if (!(error instanceof ActivityNotFoundError))
              errors.push(`releasing ${activity.activityId} of ${activity.workflowId}: ${(error as Error).message}`);
            return false;
          },
        ),
      ),
    );
    return { released: failed.filter(Boolean).length, errors };
  });
}
