import type { Client } from '@temporalio/client';
import { envRunId } from '../../src/cli/commands/process.js';

/** A workflow or activity task a worker took, as the history records it. */
export interface TaskTaken {
  workflowId: string;
  /** The worker's identity: `<pid>@<host>` unless configured. */
  identity: string;
  at: number;
  /** An activity's attempt (1 for workflow tasks): above 1 when an earlier attempt failed or timed out. */
  attempt: number;
}

/**
 * Who took the tasks of a run's env-run and of its first `groups` rollout groups: every WorkflowTaskStarted and
 * ActivityTaskStarted event, with the identity of the worker that started it.
 */
export async function workerIdentities(client: Client, runId: string, groups: number): Promise<TaskTaken[]> {
  const ids = [envRunId(runId, 'gsm8k'), ...Array.from({ length: groups }, (_, i) => `clotho/${runId}/gsm8k/item-${i}`)];
  const taken: TaskTaken[] = [];
  for (const workflowId of ids) {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    for (const event of history.events ?? []) {
      const identity = event.workflowTaskStartedEventAttributes?.identity ?? event.activityTaskStartedEventAttributes?.identity;
      if (!identity || !event.eventTime) continue;
      const seconds = Number(event.eventTime.seconds ?? 0);
      const attempt = event.activityTaskStartedEventAttributes?.attempt ?? 1;
      taken.push({ workflowId, identity, attempt, at: seconds * 1000 + Math.floor((event.eventTime.nanos ?? 0) / 1e6) });
    }
  }
  return taken;
}
