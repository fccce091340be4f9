import { ActivityNotFoundError, ApplicationFailure } from '@temporalio/client';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { releaseActivitiesOf, WORKER_EXITED, type ReleaseClient } from './release.js';

const { PendingActivityState } = proto.temporal.api.enums.v1;
const STARTED = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
const SCHEDULED = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED;

/** A client whose workflows have these pending activities and children; records the attempts it is asked to fail. */
function fakeClient(workflows: Record<string, { activities?: object[]; children?: string[] } | { error: string }>, gone: string[] = []) {
  const failed: { workflowId: string; activityId: string; failure: ApplicationFailure }[] = [];
  const client = {
    options: { namespace: 'default' },
    withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn(),
    workflowService: {
      describeWorkflowExecution: async ({ execution }: { execution: { workflowId: string } }) => {
        const workflow = workflows[execution.workflowId];
        if (!workflow) throw Object.assign(new Error('workflow not found'), { code: 5, details: 'workflow not found', metadata: {} });
        if ('error' in workflow) throw Object.assign(new Error(workflow.error), { code: 14, details: workflow.error, metadata: {} });
        return {
          pendingActivities: workflow.activities ?? [],
          pendingChildren: (workflow.children ?? []).map((workflowId) => ({ workflowId })),
        };
      },
    },
    activity: {
      fail: async (activity: { workflowId: string; activityId: string }, failure: ApplicationFailure) => {
        if (gone.includes(activity.activityId)) throw new ActivityNotFoundError('gone');
        failed.push({ ...activity, failure });
      },
    },
  } as unknown as ReleaseClient;
  return { client, failed };
}

describe('releasing the activities of an Atropos worker that exited', () => {
  it("fails, as retryable, the attempts it had started in the env-run and its groups, and no other worker's", async () => {
    const { client, failed } = fakeClient({
      run: { activities: [{ activityId: 'next', state: STARTED, lastWorkerIdentity: '7@here' }], children: ['item-0', 'item-1', 'item-2'] },
      'item-0': { activities: [{ activityId: 'collect', state: STARTED, lastWorkerIdentity: '7@here' }] },
      // Started by another worker, or waiting for its next attempt: left alone.
      'item-1': { activities: [{ activityId: 'collect', state: STARTED, lastWorkerIdentity: '8@there' }] },
      'item-2': { activities: [{ activityId: 'collect', state: SCHEDULED, lastWorkerIdentity: '7@here' }] },
    });
    expect(await releaseActivitiesOf(client, 'run', '7@here', 'exited (SIGKILL)')).toEqual({ released: 2, errors: [] });
    expect(failed.map((f) => `${f.workflowId}/${f.activityId}`)).toEqual(['run/next', 'item-0/collect']);
    expect(failed[0]!.failure).toMatchObject({
      type: WORKER_EXITED,
      nonRetryable: false,
      message: 'the Atropos worker 7@here that ran it exited (SIGKILL)',
    });
  });

  it('skips an attempt that ended meanwhile, a group that closed, and a run that is not there', async () => {
    const { client, failed } = fakeClient(
      {
        run: { children: ['item-0', 'item-1'] },
        'item-0': { activities: [{ activityId: 'collect', state: STARTED, lastWorkerIdentity: '7@here' }] },
      },
      ['collect'],
    );
    expect(await releaseActivitiesOf(client, 'run', '7@here', 'exited (1)')).toEqual({ released: 0, errors: [] });
    expect(await releaseActivitiesOf(client, 'no-such-run', '7@here', 'exited (1)')).toEqual({ released: 0, errors: [] });
    expect(failed).toEqual([]);
  });

  it('answers, one line each, the workflows it could not describe and the attempts it could not fail, and releases the rest', async () => {
    const { client, failed } = fakeClient({
      run: { activities: [{ activityId: 'next', state: STARTED, lastWorkerIdentity: '7@here' }], children: ['item-0', 'item-1'] },
      'item-0': { error: 'connection refused' },
      'item-1': { activities: [{ activityId: 'collect', state: STARTED, lastWorkerIdentity: '7@here' }] },
    });
    client.activity.fail = async (id, failure) => {
      const activity = id as { workflowId: string; activityId: string };
      if (activity.activityId === 'next') throw new Error('deadline exceeded');
      failed.push({ ...activity, failure: failure as ApplicationFailure });
    };
    expect(await releaseActivitiesOf(client, 'run', '7@here', 'exited (1)')).toEqual({
      released: 1,
      errors: ['describing item-0: connection refused', 'releasing next of run: deadline exceeded'],
    });
    expect(failed.map((f) => `${f.workflowId}/${f.activityId}`)).toEqual(['item-1/collect']);
  });
});
