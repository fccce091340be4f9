/**
 * Where a rollout group's time goes, read from its Temporal history: each activity's wait in its task queue and its
 * run, and what is left between them (workflow tasks, local activities, the server's own bookkeeping).
 */
import type { Client } from '@temporalio/client';

/** One activity type's totals over an episode. */
export interface ActivityTimes {
  count: number;
  /** Scheduled → started: waiting in the task queue for a worker slot. */
  queueMs: number;
  /** Started → completed, as the server saw it. */
  runMs: number;
}

/** What one rollout group's history says. */
export interface EpisodeHistory {
  events: number;
  /** Bytes of the history, when the server reports it. */
  bytes: number | undefined;
  /** First event to last. */
  wallMs: number;
  activities: Record<string, ActivityTimes>;
  /**
   * The workflow's own round trips to the server: a poll and a completion per workflow task and per activity task
   * (its parent's are not in its history).
   */
  roundTrips: number;
}

interface Timestamp {
  seconds?: unknown;
  nanos?: number | null;
}

/** An event's time in ms since the epoch. Seconds arrive as a protobuf Long; its decimal string is exact for any time this century. */
export const msOf = (t: Timestamp | null | undefined) => Number(String(t?.seconds ?? 0)) * 1000 + (t?.nanos ?? 0) / 1e6;

/** Reads a workflow's length, size and activity timings. */
export async function readEpisodeHistory(client: Client, workflowId: string): Promise<EpisodeHistory> {
  const handle = client.workflow.getHandle(workflowId);
  const [description, history] = await Promise.all([handle.describe(), handle.fetchHistory()]);
  const events = history.events ?? [];
  const scheduled = new Map<string, { name: string; at: number; startedAt?: number }>();
  const activities: Record<string, ActivityTimes> = {};
  let tasks = 0;
  for (const event of events) {
    if (event.workflowTaskCompletedEventAttributes || event.activityTaskStartedEventAttributes) tasks++;
    const at = msOf(event.eventTime);
    const id = String(event.eventId);
    const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) scheduled.set(id, { name, at });
    const started = event.activityTaskStartedEventAttributes;
    if (started) scheduled.get(String(started.scheduledEventId))!.startedAt = at;
    const completed = event.activityTaskCompletedEventAttributes;
    if (completed) {
      const activity = scheduled.get(String(completed.scheduledEventId))!;
      const times = (activities[activity.name] ??= { count: 0, queueMs: 0, runMs: 0 });
      const startedAt = activity.startedAt ?? activity.at;
      times.count += 1;
      times.queueMs += startedAt - activity.at;
      times.runMs += at - startedAt;
    }
  }
  const wallMs = events.length > 0 ? msOf(events.at(-1)!.eventTime) - msOf(events[0]!.eventTime) : 0;
  return { events: description.historyLength, bytes: description.historySize, wallMs, activities, roundTrips: 2 * tasks };
}

/** The mean of several episodes' histories, activity by activity. */
export function meanHistory(histories: EpisodeHistory[]): EpisodeHistory {
  const n = histories.length;
  const activities: Record<string, ActivityTimes> = {};
  for (const h of histories) {
    for (const [name, t] of Object.entries(h.activities)) {
      const sum = (activities[name] ??= { count: 0, queueMs: 0, runMs: 0 });
      sum.count += t.count / n;
      sum.queueMs += t.queueMs / n;
      sum.runMs += t.runMs / n;
    }
  }
  const mean = (f: (h: EpisodeHistory) => number) => histories.reduce((a, h) => a + f(h), 0) / n;
  const sized = histories.every((h) => h.bytes !== undefined);
  return {
    events: mean((h) => h.events),
    bytes: sized ? mean((h) => h.bytes!) : undefined,
    wallMs: mean((h) => h.wallMs),
    activities,
    roundTrips: mean((h) => h.roundTrips),
  };
}
