import type { WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import { failureClass, type FailureClass } from '../inference/errors.js';

/** A workflow's history as the client fetches it. */
export type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
export type HistoryEvent = NonNullable<History['events']>[number];
type Failure = NonNullable<NonNullable<HistoryEvent['activityTaskFailedEventAttributes']>['failure']>;
type Payload = NonNullable<NonNullable<NonNullable<HistoryEvent['markerRecordedEventAttributes']>['failure']>['encodedAttributes']>;
/** An activity of a running workflow as `describe` reports it (attempt and last failure so far). */
export type PendingActivity = NonNullable<WorkflowExecutionDescription['raw']['pendingActivities']>[number];

/** Turns a payload into its value (the client's data converter). */
export type PayloadDecoder = (payload: Payload) => unknown;

/** One activity of the workflow, from its scheduling (or local-activity marker) to its end. */
export interface TimelineStep {
  activity: string;
  /** Ran as a local activity: recorded as a marker, without its input. */
  local: boolean;
  /** Milliseconds from the workflow's start to the step's scheduling (a local activity's: its estimated start). */
  startMs: number;
  /** Until its end, retries included; null while it runs. */
  durationMs: number | null;
  status: 'completed' | 'failed' | 'timed out' | 'cancelled' | 'running';
  /** The attempt that ended it, or the one running now. */
  attempt: number;
  /** Failures of earlier attempts that the history keeps (Temporal keeps the last one before the final attempt). */
  retries: { attempt: number; message: string; class?: FailureClass }[];
  /** Why the step failed for good. */
  error?: string;
  /** Whose failure that was, where its type is known (`failureClass`). */
  errorClass?: FailureClass;
  /** Where it failed, when a worker in another language raised it (an Atropos environment's Python traceback). */
  trace?: string;
  input?: unknown;
  result?: unknown;
  /** The summary the workflow gave the activity (a tool call's name and arguments). */
  summary?: string;
  /** The details of the running attempt's last heartbeat (`describe` has them; the history does not). */
  heartbeat?: unknown;
}

/** How the workflow ended, or that it still runs. */
export interface TimelineEnd {
  status: 'completed' | 'failed' | 'timed out' | 'cancelled' | 'terminated' | 'continued as new' | 'running';
  /** Milliseconds from the start. */
  atMs: number | null;
  result?: unknown;
  error?: string;
}

export interface Timeline {
  workflowType: string;
  /** When the workflow started, in ms since the epoch. */
  startedAt: number;
  input: unknown;
  steps: TimelineStep[];
  end: TimelineEnd;
}

const MARKER = 'core_local_activity';

/** What Temporal's SDK core writes in a local activity's marker. */
interface LocalActivityMarker {
  seq: number;
  attempt: number;
  activity_id: string;
  activity_type: string;
  complete_time?: { seconds: number; nanos: number } | null;
  /** Set when the attempt failed and the next one waits on a timer. */
  backoff?: unknown;
}

/**
 * Reads a workflow's history into a timeline of its activities: scheduled, started (with the attempt and the last
 * failure of a retried one), closed; local activities from their markers. `pending` adds what `describe` knows of the
 * activities of a running workflow (attempts and failures not yet in the history).
 */
export function buildTimeline(history: History, decode: PayloadDecoder, pending: readonly PendingActivity[] = []): Timeline {
  const events = history.events ?? [];
  const byId = new Map(events.map((e) => [num(e.eventId), e]));
  const first = events[0];
  const startedAt = ms(first?.eventTime);
  const at = (e: HistoryEvent | undefined) => (e ? ms(e.eventTime) - startedAt : 0);
  const started = first?.workflowExecutionStartedEventAttributes;
  const timeline: Timeline = {
    workflowType: started?.workflowType?.name ?? 'unknown',
    startedAt,
    input: firstPayload(started?.input, decode),
    steps: [],
    end: { status: 'running', atMs: null },
  };
  const scheduled = new Map<number, TimelineStep>();
  const locals = new Map<string, TimelineStep>();
  /** When the last local activity of a workflow task completed: the next one of that task started then. */
  const localEnds = new Map<number, number>();

  for (const event of events) {
    const a = event.activityTaskScheduledEventAttributes;
    if (a) {
      const summary = event.userMetadata?.summary ? decode(event.userMetadata.summary) : undefined;
      const step: TimelineStep = {
        activity: a.activityType?.name ?? 'unknown',
        local: false,
        startMs: at(event),
        durationMs: null,
        status: 'running',
        attempt: 1,
        retries: [],
        input: firstPayload(a.input, decode),
        ...(typeof summary === 'string' ? { summary } : {}),
      };
      scheduled.set(num(event.eventId), step);
      const id = a.activityId ?? '';
      const live = pending.find((p) => p.activityId === id);
      if (live) {
        step.attempt = live.attempt ?? 1;
        if (live.lastFailure)
          step.retries.push({ attempt: step.attempt - 1, message: failureMessage(live.lastFailure), ...classOf(live.lastFailure) });
        // Details outlive their attempt: a retry that has not heartbeaten yet still shows the failed attempt's.
        const current = live.lastStartedTime && ms(live.lastHeartbeatTime) >= ms(live.lastStartedTime);
        const heartbeat = current ? firstPayload(live.heartbeatDetails, decode) : undefined;
        if (heartbeat !== undefined) step.heartbeat = heartbeat;
      }
      timeline.steps.push(step);
      continue;
    }
    const s = event.activityTaskStartedEventAttributes;
    if (s) {
      const step = scheduled.get(num(s.scheduledEventId));
      if (step) {
        step.attempt = s.attempt ?? 1;
        if (s.lastFailure && step.attempt > 1 && !step.retries.some((r) => r.attempt === step.attempt - 1)) {
          step.retries.push({ attempt: step.attempt - 1, message: failureMessage(s.lastFailure), ...classOf(s.lastFailure) });
        }
      }
      continue;
    }
    const closed = closeOf(event, decode);
    if (closed) {
      const step = scheduled.get(closed.scheduledEventId);
      if (step) {
        Object.assign(step, closed.fields);
        step.durationMs = at(event) - step.startMs;
      }
      continue;
    }
    const m = event.markerRecordedEventAttributes;
    if (m?.markerName === MARKER) {
      const data = firstPayload(m.details?.data, decode) as LocalActivityMarker | undefined;
      if (!data) continue;
      const task = byId.get(num(m.workflowTaskCompletedEventId))?.workflowTaskCompletedEventAttributes;
      const taskStarted = at(byId.get(num(task?.startedEventId)));
      const completedAt = data.complete_time ? ms(data.complete_time) - startedAt : at(event);
      const startMs = Math.min(completedAt, Math.max(taskStarted, localEnds.get(num(m.workflowTaskCompletedEventId)) ?? -Infinity));
      localEnds.set(num(m.workflowTaskCompletedEventId), completedAt);
      let step = locals.get(data.activity_id);
      if (!step) {
        step = { activity: data.activity_type, local: true, startMs, durationMs: null, status: 'running', attempt: 1, retries: [] };
        locals.set(data.activity_id, step);
        timeline.steps.push(step);
      }
      step.attempt = data.attempt;
      step.durationMs = completedAt - step.startMs;
      if (m.failure && data.backoff) {
        step.retries.push({ attempt: data.attempt, message: failureMessage(m.failure), ...classOf(m.failure) });
      } else if (m.failure) {
        Object.assign(step, { status: 'failed', error: failureMessage(m.failure), ...errorClassOf(m.failure) });
      } else {
        Object.assign(step, { status: 'completed', result: firstPayload(m.details?.result, decode) });
      }
      continue;
    }
    const taskFailed = event.workflowTaskFailedEventAttributes;
    if (taskFailed) {
      // A workflow task that failed (a nondeterminism error after a code change, a bug in workflow code) stalls the
      // group until a worker can run it; Temporal records the first failure of a series.
      const cause = String(taskFailed.cause ?? '').replace(/^WORKFLOW_TASK_FAILED_CAUSE_/, '');
      const message = failureMessage(taskFailed.failure);
      timeline.steps.push({
        activity: 'workflow task',
        local: false,
        startMs: at(event),
        durationMs: 0,
        status: 'failed',
        attempt: 1,
        retries: [],
        error: /^\d*$/.test(cause) ? message : `${cause.toLowerCase()}: ${message}`,
      });
      continue;
    }
    const end = endOf(event, decode);
    if (end) timeline.end = { ...end, atMs: at(event) };
  }
  return timeline;
}

function closeOf(event: HistoryEvent, decode: PayloadDecoder): { scheduledEventId: number; fields: Partial<TimelineStep> } | undefined {
  const done = event.activityTaskCompletedEventAttributes;
  if (done)
    return { scheduledEventId: num(done.scheduledEventId), fields: { status: 'completed', result: firstPayload(done.result, decode) } };
  const failed = event.activityTaskFailedEventAttributes;
  if (failed)
    return {
      scheduledEventId: num(failed.scheduledEventId),
      fields: { status: 'failed', error: failureMessage(failed.failure), ...errorClassOf(failed.failure), ...foreignTrace(failed.failure) },
    };
  const timedOut = event.activityTaskTimedOutEventAttributes;
  if (timedOut)
    return {
      scheduledEventId: num(timedOut.scheduledEventId),
      fields: { status: 'timed out', error: failureMessage(timedOut.failure), errorClass: 'infrastructure' },
    };
  const cancelled = event.activityTaskCanceledEventAttributes;
  if (cancelled) return { scheduledEventId: num(cancelled.scheduledEventId), fields: { status: 'cancelled' } };
  return undefined;
}

function endOf(event: HistoryEvent, decode: PayloadDecoder): Omit<TimelineEnd, 'atMs'> | undefined {
  if (event.workflowExecutionCompletedEventAttributes) {
    return { status: 'completed', result: firstPayload(event.workflowExecutionCompletedEventAttributes.result, decode) };
  }
  if (event.workflowExecutionFailedEventAttributes)
    return { status: 'failed', error: failureMessage(event.workflowExecutionFailedEventAttributes.failure) };
  if (event.workflowExecutionTimedOutEventAttributes) return { status: 'timed out' };
  if (event.workflowExecutionCanceledEventAttributes) return { status: 'cancelled' };
  if (event.workflowExecutionTerminatedEventAttributes) {
    const reason = event.workflowExecutionTerminatedEventAttributes.reason;
    return { status: 'terminated', ...(reason ? { error: reason } : {}) };
  }
  if (event.workflowExecutionContinuedAsNewEventAttributes) return { status: 'continued as new' };
  return undefined;
}

/** A failure's message followed by its causes' (Temporal wraps the cause that says what went wrong). */
export function failureMessage(failure: Failure | null | undefined): string {
  const parts: string[] = [];
  for (let f = failure; f; f = f.cause) if (f.message && !parts.includes(f.message)) parts.push(f.message);
  return parts.join(': ') || 'unknown failure';
}

/** Whose failure it was, from the innermost failure that names its type (Temporal's timeouts are infrastructure's). */
function classOf(failure: Failure | null | undefined): { class?: FailureClass } {
  let type: string | undefined;
  for (let f = failure; f; f = f.cause) {
    if (f.timeoutFailureInfo) type = 'TimeoutFailure';
    else if (f.applicationFailureInfo?.type) type = f.applicationFailureInfo.type;
  }
  return type === undefined ? {} : { class: failureClass(type) };
}

function errorClassOf(failure: Failure | null | undefined): { errorClass?: FailureClass } {
  const { class: found } = classOf(failure);
  return found === undefined ? {} : { errorClass: found };
}

/** The stack trace of a failure raised outside TypeScript (Clotho's own are in its logs), innermost first. */
function foreignTrace(failure: Failure | null | undefined): { trace?: string } {
  let trace: string | undefined;
  for (let f = failure; f; f = f.cause) if (f.stackTrace && f.source !== 'TypeScriptSDK') trace = f.stackTrace;
  return trace ? { trace: trace.trimEnd() } : {};
}

function firstPayload(payloads: { payloads?: Payload[] | null } | null | undefined, decode: PayloadDecoder): unknown {
  const payload = payloads?.payloads?.[0];
  return payload ? decode(payload) : undefined;
}

/** Protobuf int64 fields arrive as Long objects (or numbers, or strings once through JSON). */
function num(value: unknown): number {
  if (value === null || value === undefined) return 0;
  return typeof value === 'number' ? value : Number(String(value));
}

/** A protobuf timestamp in ms since the epoch; 0 when absent. */
export function ms(timestamp: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return timestamp ? num(timestamp.seconds) * 1000 + (timestamp.nanos ?? 0) / 1e6 : 0;
}
