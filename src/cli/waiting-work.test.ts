import type { WorkflowExecutionDescription } from '@temporalio/client';
import proto from '@temporalio/proto';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import type { History } from './history-timeline.js';
import { stalledWorkflowTask, stoppedHere, waitingIn, waitingSummary, waitingText, type WaitingWork } from './waiting-work.js';

const { PendingActivityState, PendingWorkflowTaskState, TimeoutType } = proto.temporal.api.enums.v1;
type Raw = WorkflowExecutionDescription['raw'];
const NOW = 1_800_000_000_000;
const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
// Fields as plain objects (timestamps with number seconds, as JSON gives them); the code reads them the same way.
const raw = (fields: object) => fields as Raw;
const dead = (identity: string | null | undefined) => identity === 'dead';

describe('waitingIn', () => {
  it('reports an activity retried after a heartbeat timeout as a step on a stopped worker, with its next attempt', () => {
    const works = waitingIn(
      'g',
      raw({
        pendingActivities: [
          {
            activityId: '7',
            activityType: { name: 'callTool' },
            state: PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
            attempt: 2,
            lastFailure: { message: 'activity Heartbeat timeout', timeoutFailureInfo: { timeoutType: TimeoutType.TIMEOUT_TYPE_HEARTBEAT } },
            nextAttemptScheduleTime: at(NOW + 9_000),
          },
        ],
      }),
      dead,
    );
    expect(works).toEqual([{ workflowId: 'g', waits: 'retry', what: 'tool call', why: 'on a stopped worker', at: NOW + 9_000 }]);
    expect(waitingText(works[0]!, NOW)).toBe('tool call on a stopped worker, next attempt in 9 s');
  });

  it('reports an attempt still started on a worker that stopped, retried when its heartbeat timeout passes', () => {
    const started = (identity: string) => ({
      activityId: '3',
      activityType: { name: 'generateTurn' },
      state: PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
      attempt: 1,
      lastWorkerIdentity: identity,
      lastHeartbeatTime: at(NOW - 4_000),
      activityOptions: { heartbeatTimeout: { seconds: 10 } },
    });
    expect(waitingIn('g', raw({ pendingActivities: [started('alive')] }), dead)).toEqual([]);
    const [work] = waitingIn('g', raw({ pendingActivities: [started('dead')] }), dead);
    expect(work).toEqual({ workflowId: 'g', waits: 'timeout', what: 'generation', why: 'on a stopped worker', at: NOW + 6_000 });
    expect(waitingText(work!, NOW)).toBe('generation on a stopped worker, retried in 6 s');
  });

  it('names a failure that is not a timeout by its message, and a retried workflow task', () => {
    const works = waitingIn(
      'g',
      raw({
        pendingActivities: [
          {
            activityType: { name: 'setupGroup' },
            state: PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
            attempt: 3,
            lastFailure: { message: 'sandbox did not start' },
          },
        ],
        pendingWorkflowTask: { state: PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED, attempt: 2 },
      }),
      dead,
    );
    expect(works.map((w) => waitingText(w, NOW))).toEqual([
      'group setup sandbox did not start, waiting for a worker to take it',
      'workflow task its last attempt failed or timed out, waiting for a worker to take it',
    ]);
  });

  it("keeps an application failure's type, whole message and attempt (a JSONL delivery that found its file changed)", () => {
    const message = `${'x'.repeat(100)} --rebuild-output`;
    const [work] = waitingIn(
      'run',
      raw({
        pendingActivities: [
          {
            activityType: { name: 'deliverToJsonl' },
            state: PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
            attempt: 3,
            lastFailure: { message, applicationFailureInfo: { type: 'SinkCorrupted' } },
          },
        ],
      }),
      dead,
    );
    expect(work).toMatchObject({ what: 'delivery to the JSONL file', failure: { type: 'SinkCorrupted', message, attempt: 2 } });
  });

  it('finds nothing waiting in a group whose steps run on live workers', () => {
    expect(
      waitingIn(
        'g',
        raw({
          pendingActivities: [
            {
              activityType: { name: 'callTool' },
              state: PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
              attempt: 1,
              lastWorkerIdentity: 'alive',
            },
          ],
          pendingWorkflowTask: { state: PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED, attempt: 1 },
        }),
        dead,
      ),
    ).toEqual([]);
  });
});

describe('waitingSummary', () => {
  it('counts waiting work by kind and shows the soonest next attempt of each', () => {
    const retry = (workflowId: string, inMs: number): WaitingWork => ({
      workflowId,
      waits: 'retry',
      what: 'tool call',
      why: 'on a stopped worker',
      at: NOW + inMs,
    });
    const summary = waitingSummary(
      [
        retry('a', 12_000),
        retry('b', 9_000),
        retry('c', 20_000),
        { workflowId: 'd', waits: 'timeout', what: 'workflow task', why: 'on a stopped worker', at: null },
      ],
      NOW,
    );
    expect(summary).toBe(
      '3 waiting to be retried (tool call on a stopped worker, next attempt in 9 s) · ' +
        '1 waiting for a timeout (workflow task on a stopped worker, retried when its heartbeat timeout passes)',
    );
    expect(waitingSummary([], NOW)).toBe('');
  });
});

describe('stalledWorkflowTask', () => {
  const history = (...events: object[]) =>
    ({
      events: [
        { eventTime: at(NOW - 60_000), workflowExecutionStartedEventAttributes: { workflowTaskTimeout: { seconds: 10 } } },
        ...events,
      ],
    }) as History;

  it('finds a workflow task started on a worker that stopped, timed out 10 s after it started', () => {
    const stalled = stalledWorkflowTask(
      'g',
      history(
        { workflowTaskScheduledEventAttributes: {} },
        { eventTime: at(NOW - 3_000), workflowTaskStartedEventAttributes: { identity: 'dead' } },
      ),
      dead,
    );
    expect(stalled).toEqual({ workflowId: 'g', waits: 'timeout', what: 'workflow task', why: 'on a stopped worker', at: NOW + 7_000 });
  });

  it('finds a workflow task that timed out on a stopped worker, waiting for a worker to take it', () => {
    const stalled = stalledWorkflowTask(
      'g',
      history(
        { eventTime: at(NOW - 13_000), workflowTaskStartedEventAttributes: { identity: 'dead' } },
        { workflowTaskTimedOutEventAttributes: {} },
        { workflowTaskScheduledEventAttributes: {} },
      ),
      dead,
    );
    expect(waitingText(stalled!, NOW)).toBe('workflow task on a stopped worker, waiting for a worker to take it');
  });

  it('reads past the transient attempt after a timeout, which names no worker, to the attempt that stalled', () => {
    const stalled = stalledWorkflowTask(
      'g',
      history(
        { eventTime: at(NOW - 13_000), workflowTaskStartedEventAttributes: { identity: 'dead' } },
        { workflowTaskTimedOutEventAttributes: {} },
        { workflowTaskScheduledEventAttributes: {} },
        { workflowTaskStartedEventAttributes: { identity: '' } },
      ),
      dead,
    );
    expect(stalled).toMatchObject({ what: 'workflow task', why: 'on a stopped worker' });
  });

  it('finds none when the last task completed or runs on a live worker', () => {
    expect(
      stalledWorkflowTask(
        'g',
        history({ workflowTaskStartedEventAttributes: { identity: 'dead' } }, { workflowTaskCompletedEventAttributes: {} }),
        dead,
      ),
    ).toBeNull();
    expect(stalledWorkflowTask('g', history({ workflowTaskStartedEventAttributes: { identity: 'alive' } }), dead)).toBeNull();
  });
});

describe('stoppedHere', () => {
  it('tells a stopped process of this host from a running one, and knows nothing of other hosts', () => {
    expect(stoppedHere(`${process.pid}@${hostname()}`)).toBe(false);
    // Above the kernel's largest pid (4194304), so no process has it.
    expect(stoppedHere(`4194305@${hostname()}`)).toBe(true);
    expect(stoppedHere('4194305@another-host')).toBe(false);
    expect(stoppedHere('a custom identity')).toBe(false);
  });
});
