import { readFileSync } from 'node:fs';

/** What the chaos trainer logs, one JSON line each (fsync'd one by one), with its time and pid ({@link TrainerEvent}). */
export type TrainerRecord =
  | { ev: 'start' | 'registered' }
  /** The batch's groups (by item index) are trained: written before the ack, so a crash may repeat them. */
  | { ev: 'trained'; lease: string; batch: string; items: number[] }
  | { ev: 'acked'; lease: string; batch: string; status: number }
  /** The API stopped answering at `path`; `reconnected` says when it answered again and after how long. */
  | { ev: 'failing'; path: string; error: string }
  | { ev: 'reconnected'; path: string; downMs: number; ms: number }
  /** A call that took over a second (the first answer after a restart, typically). */
  | { ev: 'slow'; path: string; ms: number };

export type TrainerEvent = TrainerRecord & { t: number; pid: number };

/** Every event of a trainer log; a torn or foreign line is skipped (and counted). */
export function readTrainerLog(path: string): { events: TrainerEvent[]; unreadable: number } {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return { events: [], unreadable: 0 };
  }
  const events: TrainerEvent[] = [];
  let unreadable = 0;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      events.push(JSON.parse(line) as TrainerEvent);
    } catch {
      unreadable++;
    }
  }
  return { events, unreadable };
}

/** What the trainer got, by group and by batch. */
export interface Deliveries {
  /** Item index → the distinct batch ids it was trained in. */
  batchesByItem: Map<number, Set<string>>;
  /** Groups trained in two different batches: the same rollout delivered twice. Must be none. */
  duplicates: number[];
  /** Batches trained more than once under different leases (a trainer crashed before its ack, or acked too late). */
  redeliveries: { batch: string; times: number }[];
  /** Groups the trainer could not name (a message it did not recognise). */
  unknown: number;
  /** Acks refused because the lease had run out (409) or was unknown (404). */
  refusedAcks: number;
}

export function deliveries(events: TrainerEvent[]): Deliveries {
  const batchesByItem = new Map<number, Set<string>>();
  const trainings = new Map<string, number>();
  let unknown = 0;
  for (const event of events) {
    if (event.ev !== 'trained') continue;
    trainings.set(event.batch, (trainings.get(event.batch) ?? 0) + 1);
    for (const item of event.items) {
      if (item < 0) unknown++;
      else batchesByItem.set(item, (batchesByItem.get(item) ?? new Set()).add(event.batch));
    }
  }
  return {
    batchesByItem,
    duplicates: [...batchesByItem].filter(([, batches]) => batches.size > 1).map(([item]) => item),
    redeliveries: [...trainings].filter(([, times]) => times > 1).map(([batch, times]) => ({ batch, times })),
    unknown,
    refusedAcks: events.filter((e) => e.ev === 'acked' && e.status !== 200).length,
  };
}
