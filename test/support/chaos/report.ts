import type { Accounting } from './accounting.js';
import { eventTime, type HistoryEvent, type ReplayOutcome } from './histories.js';
import type { KillRecord } from './kills.js';
import type { TrainerEvent } from './trainer-log.js';

/** The chaos test's printed results: the recovery table, where each recovery's time went, the summary line. */

const s = (ms: number | undefined) => (ms === undefined ? '–' : (ms / 1000).toFixed(1));
const after = (kill: KillRecord, at: number | undefined) => (at === undefined ? undefined : at - kill.killedAt);

export function recoveryTable(kills: KillRecord[]): string {
  const header = [
    'kill',
    'target',
    'at (s)',
    'restart (s)',
    'up (s)',
    'ingested (s)',
    'acked (s)',
    'recovered after (s)',
    'after up (s)',
    'bound (s)',
  ];
  const rows = kills.map((k) => [
    String(k.n),
    targetLabel(k),
    k.at.toFixed(1),
    s(after(k, k.restartAt || undefined)),
    s(after(k, k.upAt)),
    s(after(k, k.ingestedAt)),
    s(after(k, k.ackedAt)),
    k.recoveredAt === undefined ? 'NOT RECOVERED' : `${s(after(k, k.recoveredAt))}${withinBound(k) ? '' : ' (over bound)'}`,
    // Issue 25's measure: how long the run took to move once the restarted process was ready.
    s(k.recoveredAt === undefined || k.upAt === undefined ? undefined : Math.max(0, k.recoveredAt - k.upAt)),
    k.boundS.toFixed(1),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [
    line(header),
    ...rows.map(line),
    'Times are seconds after the kill. restart: the killed process was started again; up: it listened / registered /',
    'polled / served; ingested: the batcher received a group after the restart; acked: the trainer acked a batch after',
    'the restart. Recovered: env → ingested; trainer → acked; api and temporal → both; after up: recovered less up.',
    'Bound: restart delay + allowance,',
    "or max(up, floor) + allowance where the profile sets a floor. env (python, n calls): an Atropos run's Python worker,",
    'killed with n model calls of its groups in flight.',
  ].join('\n');
}

/** `env → serve`; `env (python, 2 calls) → worker` for an Atropos run's Python worker killed mid-group. */
const targetLabel = (k: KillRecord) => {
  const target = k.modelCallsInFlight === undefined ? k.target : `${k.target} (python, ${k.modelCallsInFlight} calls)`;
  return k.mode ? `${target} → ${k.mode}` : target;
};

export const withinBound = (k: KillRecord) => k.recoveredAt !== undefined && (k.recoveredAt - k.killedAt) / 1000 <= k.boundS;

const SHORT_TIMEOUT: Record<string, string> = {
  TIMEOUT_TYPE_SCHEDULE_TO_START: 'schedule-to-start',
  TIMEOUT_TYPE_START_TO_CLOSE: 'start-to-close',
};

/** A workflow's history, named for the breakdown: `batcher`, `env-run`, `item-12`. */
export interface NamedHistory {
  name: string;
  events: HistoryEvent[];
}

/**
 * What a history says happened in `[from, to]`: workflow tasks that timed out (on a dead worker's sticky queue, or
 * started by a worker that died) or failed, the first task completed after `restartAt`, and activities that had to
 * be tried again (a model call in flight on the dead worker, sent again after its heartbeat timeout).
 */
function historyMilestones(kill: KillRecord, { name, events }: NamedHistory, to: number): string[] {
  const inWindow = events.filter((e) => eventTime(e) > kill.killedAt - 500 && eventTime(e) <= to + 500);
  const byId = (id: string) => events.find((e) => e.eventId === id);
  const parts: string[] = [];
  for (const event of inWindow) {
    const at = s(after(kill, eventTime(event)));
    if (event.eventType === 'EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT') {
      const attrs = event.workflowTaskTimedOutEventAttributes as { scheduledEventId: string; startedEventId?: string; timeoutType: string };
      const scheduled = byId(attrs.scheduledEventId);
      const queue = (scheduled?.workflowTaskScheduledEventAttributes as { taskQueue?: { kind?: string } } | undefined)?.taskQueue?.kind;
      // Schedule-to-start runs from when the task was scheduled, start-to-close from when a worker took it.
      const from = attrs.timeoutType === 'TIMEOUT_TYPE_START_TO_CLOSE' && attrs.startedEventId ? byId(attrs.startedEventId) : scheduled;
      const waited = from ? ` after ${s(eventTime(event) - eventTime(from))}` : '';
      const kind = `${SHORT_TIMEOUT[attrs.timeoutType] ?? attrs.timeoutType}${queue === 'TASK_QUEUE_KIND_STICKY' ? ', sticky queue' : ''}`;
      parts.push(`${name} task timed out (${kind})${waited} at ${at}`);
    } else if (event.eventType === 'EVENT_TYPE_WORKFLOW_TASK_FAILED') {
      const attrs = event.workflowTaskFailedEventAttributes as { cause?: string; failure?: { message?: string } };
      parts.push(`${name} task FAILED at ${at}: ${attrs.cause ?? ''} ${attrs.failure?.message?.slice(0, 120) ?? ''}`);
    } else if (event.eventType === 'EVENT_TYPE_ACTIVITY_TASK_STARTED') {
      const attrs = event.activityTaskStartedEventAttributes as {
        scheduledEventId: string;
        attempt?: number;
        lastFailure?: { message?: string };
      };
      if ((attrs.attempt ?? 1) < 2) continue;
      const type = (byId(attrs.scheduledEventId)?.activityTaskScheduledEventAttributes as { activityType?: { name?: string } } | undefined)
        ?.activityType?.name;
      parts.push(`${name} ${type} attempt ${attrs.attempt} started at ${at} (${attrs.lastFailure?.message ?? 'retried'})`);
    }
  }
  const firstCompleted = inWindow.find((e) => e.eventType === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED' && eventTime(e) > kill.restartAt);
  if (firstCompleted) parts.push(`${name}'s first task after the restart completed at ${s(after(kill, eventTime(firstCompleted)))}`);
  return parts;
}

/**
 * Where one recovery's time went: what the histories that had to move again say (see {@link historyMilestones}) and
 * the trainer's log (its first answer after failing calls, and calls that took over a second).
 */
export function recoveryBreakdown(kill: KillRecord, histories: NamedHistory[], trainer: TrainerEvent[]): string {
  const end = kill.recoveredAt ?? kill.killedAt + 120_000;
  const parts: string[] = [`restarted at ${s(after(kill, kill.restartAt))}`, `up at ${s(after(kill, kill.upAt))}`];
  for (const history of histories) parts.push(...historyMilestones(kill, history, end));
  const reconnected = trainer.find((e) => e.ev === 'reconnected' && e.t > kill.killedAt && e.t <= end + 500);
  if (reconnected?.ev === 'reconnected') {
    parts.push(`trainer's first answer at ${s(after(kill, reconnected.t))} (${reconnected.path}, took ${s(reconnected.ms)})`);
  }
  for (const slow of trainer.filter((e) => e.ev === 'slow' && e.t > kill.killedAt && e.t <= end + 500)) {
    if (slow.ev === 'slow') parts.push(`slow ${slow.path} (${s(slow.ms)}) answered at ${s(after(kill, slow.t))}`);
  }
  parts.push(`ingested at ${s(after(kill, kill.ingestedAt))}`, `acked at ${s(after(kill, kill.ackedAt))}`);
  return `kill ${kill.n} (${targetLabel(kill)}): ${parts.join(' · ')}`;
}

export function summaryLine(seed: number, accounting: Accounting | undefined, kills: KillRecord[], replays: ReplayOutcome[]): string {
  const byTarget = ['env', 'api', 'trainer', 'temporal'].map((t) => {
    const of = kills.filter((k) => k.target === t);
    const times = of.map((k) => (k.recoveredAt === undefined ? 'NOT RECOVERED' : `${s(k.recoveredAt - k.killedAt)} s`)).join(', ');
    return `${t} ${of.length}${of.length ? ` (${times})` : ''}`;
  });
  const a = accounting;
  const counts = a
    ? `started ${a.started}, delivered ${a.delivered}, dropped ${sum(a.dropped)}, failed ${a.failed}, batcher-dropped ${sum(a.droppedByBatcher)}, ` +
      `waiting ${a.waiting}, duplicates ${a.duplicates.length}, redeliveries ${a.redeliveries.length}, lost ${a.lost}`
    : 'no accounting';
  const replayed = replays.length ? `; replayed ${replays.filter((r) => !r.error).length}/${replays.length} histories` : '';
  return `chaos seed=${seed}: ${counts}; kills ${kills.length}: ${byTarget.join(', ')}${replayed}`;
}

const sum = (counts: Record<string, number | undefined>) => Object.values(counts).reduce<number>((total, n) => total + (n ?? 0), 0);
