import type { WorkflowClient, WorkflowExecutionDescription } from '@temporalio/client';
import proto from '@temporalio/proto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { failureMessage, ms, type History } from './history-timeline.js';

type Raw = WorkflowExecutionDescription['raw'];
type PendingActivity = NonNullable<Raw['pendingActivities']>[number];
// A CommonJS package: its namespaces come through the default export.
const { PendingActivityState, PendingWorkflowTaskState, TimeoutType } = proto.temporal.api.enums.v1;

/**
 * Work of a running group that waits on Temporal rather than runs: an attempt that failed or timed out and waits for
 * its next one, or one still started on a worker that stopped, which only its timeout will hand to another.
 */
export interface WaitingWork {
  workflowId: string;
  /** `retry`: waits for its next attempt (or for a worker to take it); `timeout`: on a stopped worker until it times out. */
  waits: 'retry' | 'timeout';
  /** The step in words: `tool call add`, `generation`, `workflow task`. */
  what: string;
  /** Why it waits: `on a stopped worker`, `timed out`, or the last failure's message. */
  why: string;
  /** When the next attempt may start (ms since the epoch), when known. */
  at: number | null;
  /** The last attempt's failure, when an activity raised it: its type (`SinkCorrupted`), whole message and attempt. */
  failure?: { type: string; message: string; attempt: number };
}

const STEP_NAMES: Record<string, string> = {
  callTool: 'tool call',
  callTurnTools: 'tool calls',
  generateTurn: 'generation',
  setupGroup: 'group setup',
  teardownGroup: 'group teardown',
  teacherLogprobs: 'teacher call',
  judgeGroup: 'judge call',
  deliverToJsonl: 'delivery to the JSONL file',
};
const stepName = (type: string) => STEP_NAMES[type] ?? type;

/** Whether a worker identity (`pid@host`, the SDK's default) names a process of this host that no longer runs. */
export function stoppedHere(identity: string | null | undefined): boolean {
  const match = /^(\d+)@(.+)$/.exec(identity ?? '');
  if (!match || match[2] !== hostname()) return false;
  try {
    process.kill(Number(match[1]), 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
  // A process killed a moment ago may still be a zombie, answering signals until its parent reaps it.
  return zombie(Number(match[1]));
}

/** Whether /proc says the process has exited and waits to be reaped (false where there is no /proc). */
function zombie(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

function why(failure: PendingActivity['lastFailure']): string {
  const timeout = failure?.timeoutFailureInfo?.timeoutType;
  if (timeout === TimeoutType.TIMEOUT_TYPE_HEARTBEAT) return 'on a stopped worker';
  if (timeout === TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE) return 'timed out';
  const message = failureMessage(failure);
  return message.length <= 80 ? message : `${message.slice(0, 79)}…`;
}

/** What of one group's description waits: retried activities and workflow tasks, and activities on stopped workers. */
export function waitingIn(
  workflowId: string,
  raw: Raw,
  stopped: (identity: string | null | undefined) => boolean = stoppedHere,
): WaitingWork[] {
  const waiting: WaitingWork[] = [];
  for (const activity of raw.pendingActivities ?? []) {
    const what = stepName(activity.activityType?.name ?? 'activity');
    const attempt = activity.attempt ?? 1;
    if (activity.state === PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED && attempt > 1) {
      const next = ms(activity.nextAttemptScheduleTime);
      const type = activity.lastFailure?.applicationFailureInfo?.type;
      const failure = type ? { failure: { type, message: failureMessage(activity.lastFailure), attempt: attempt - 1 } } : {};
      waiting.push({ workflowId, waits: 'retry', what, why: why(activity.lastFailure), at: next > 0 ? next : null, ...failure });
    } else if (activity.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED && stopped(activity.lastWorkerIdentity)) {
      // Its heartbeat timeout (the server's copy of the options, where the server reports them) hands it on.
      const timeout = ms(activity.activityOptions?.heartbeatTimeout);
      const last = ms(activity.lastHeartbeatTime) || ms(activity.lastStartedTime);
      waiting.push({ workflowId, waits: 'timeout', what, why: 'on a stopped worker', at: timeout > 0 && last > 0 ? last + timeout : null });
    }
  }
  const task = raw.pendingWorkflowTask;
  if (task && (task.attempt ?? 1) > 1 && task.state === PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED) {
    waiting.push({ workflowId, waits: 'retry', what: 'workflow task', why: 'its last attempt failed or timed out', at: null });
  }
  return waiting;
}

/**
 * A workflow task on a worker of this host that has stopped (its local activities, generation or tool calls died
 * with it): still started there until its timeout hands the group to another worker, or timed out there and waiting
 * for a worker to take the next attempt. Null when the last task completed, or its worker runs or is elsewhere.
 */
export function stalledWorkflowTask(workflowId: string, history: History, stopped = stoppedHere): WaitingWork | null {
  const events = history.events ?? [];
  const timeout = ms(events[0]?.workflowExecutionStartedEventAttributes?.workflowTaskTimeout);
  let timedOut = false;
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (event.workflowTaskCompletedEventAttributes || event.workflowTaskFailedEventAttributes) return null;
    if (event.workflowTaskTimedOutEventAttributes) timedOut = true;
    const started = event.workflowTaskStartedEventAttributes;
    // An attempt after a timed-out one is transient (the server writes it once it completes) and names no worker:
    // the attempt before it says where the group stalled.
    if (started && !started.identity) continue;
    if (started) {
      if (!stopped(started.identity)) return null;
      const at = ms(event.eventTime);
      if (timedOut) return { workflowId, waits: 'retry', what: 'workflow task', why: 'on a stopped worker', at: null };
      return {
        workflowId,
        waits: 'timeout',
        what: 'workflow task',
        why: 'on a stopped worker',
        at: timeout > 0 && at > 0 ? at + timeout : null,
      };
    }
  }
  return null;
}

const seconds = (at: number, now: number) => `${Math.max(0, Math.ceil((at - now) / 1000))} s`;

/** One waiting step in words: `tool call on a stopped worker, next attempt in 9 s`. */
export function waitingText(work: WaitingWork, now = Date.now()): string {
  const head = `${work.what} ${work.why}`;
  if (work.waits === 'timeout')
    return `${head}, retried ${work.at === null ? 'when its heartbeat timeout passes' : `in ${seconds(work.at, now)}`}`;
  return `${head}, ${work.at !== null && work.at > now ? `next attempt in ${seconds(work.at, now)}` : 'waiting for a worker to take it'}`;
}

/**
 * The progress line's words for what waits, grouped: `3 waiting to be retried (tool call on a stopped worker, next
 * attempt in 9 s)`; the soonest next attempt of a kind is the one shown. Empty when nothing waits.
 */
export function waitingSummary(waiting: readonly WaitingWork[], now = Date.now()): string {
  const kinds = new Map<string, WaitingWork[]>();
  for (const work of waiting) {
    const key = `${work.waits}\u0000${work.what}\u0000${work.why}`;
    kinds.set(key, [...(kinds.get(key) ?? []), work]);
  }
  return [...kinds.values()]
    .map((works) => {
      const soonest = works.reduce((a, b) => ((b.at ?? Infinity) < (a.at ?? Infinity) ? b : a));
      const head = soonest.waits === 'retry' ? 'waiting to be retried' : 'waiting for a timeout';
      return `${works.length} ${head} (${waitingText(soonest, now)})`;
    })
    .join(' · ');
}

/** Groups described per look, so that a run of many groups in flight costs the server a bounded read each time. */
export const WAITING_BATCH = 32;

/**
 * Looks at a run's env-run and its groups in flight (its pending children) for work that waits: each call describes
 * the env-run (its own activities: the cursor, the delivery) and up to {@link WAITING_BATCH} of its children, the
 * next ones in turn on the next call, and answers what it saw of the env-run and last saw of every group in flight.
 */
export function waitingWatcher(
  client: WorkflowClient,
  envRunWorkflowId: string,
  hooks: {
    /** Each group in flight, as described. */
    described?(workflowId: string, description: WorkflowExecutionDescription): void;
    /** The env-run, and the ids of its groups in flight, at each look. */
    looked?(envRun: WorkflowExecutionDescription, inFlight: string[]): void;
  } = {},
) {
  let offset = 0;
  const seen = new Map<string, WaitingWork[]>();
  return async (): Promise<WaitingWork[]> => {
    const parent = await client.getHandle(envRunWorkflowId).describe();
    const own = waitingIn(envRunWorkflowId, parent.raw);
    const children = (parent.raw.pendingChildren ?? []).map((c) => c.workflowId ?? '').filter(Boolean);
    hooks.looked?.(parent, children);
    for (const id of seen.keys()) if (!children.includes(id)) seen.delete(id);
    if (children.length === 0) return own;
    offset %= children.length;
    const batch = [...children, ...children].slice(offset, offset + Math.min(WAITING_BATCH, children.length));
    offset += batch.length;
    await Promise.all(
      batch.map((id) =>
        client
          .getHandle(id)
          .describe()
          .then(
            (d) => {
              seen.set(id, waitingIn(id, d.raw));
              hooks.described?.(id, d);
            },
            () => undefined,
          ),
      ),
    );
    return [...own, ...[...seen.values()].flat()];
  };
}
