import { closeSync, openSync, readSync, statSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { BatcherView } from '../../../src/schema/batcher.js';
import { batcherViewQuery } from '../../../src/workflows/messages.js';
import type { TrainerEvent } from './trainer-log.js';

/**
 * What the chaos harness watches while it kills: the batcher (by query, straight to Temporal, so the API process
 * being dead does not blind it) and the trainer's log. Both are read by polling, at `intervalMs`; a kill's
 * recovery is timed from these readings, so their resolution is the interval plus a query's latency.
 */
export interface Monitor {
  /** The last view the batcher answered, and when. */
  latest(): { view: BatcherView; at: number } | undefined;
  /** Groups of `envId` the batcher has received (new ones, not repeats), as last read. */
  received(envId: number): number | undefined;
  /** When the batcher was first seen, after `since`, to have received more than `count` groups of `envId`. */
  receivedAfter(envId: number, since: number, count: number): number | undefined;
  /** Trainer events so far (the log is read on each call). */
  trainerEvents(): TrainerEvent[];
  /** The first ack (200) the trainer logged after `since`. */
  ackAfter(since: number): number | undefined;
  stop(): Promise<void>;
}

export function startMonitor(options: { client: () => Client; batcherId: string; trainerLog: string; intervalMs?: number }): Monitor {
  const interval = options.intervalMs ?? 250;
  const readings: { at: number; view: BatcherView }[] = [];
  let stopped = false;
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const loop = (async () => {
    while (!stopped) {
      try {
        const client = options.client();
        const view = await client.connection.withDeadline(Date.now() + 2_000, () =>
          client.workflow.getHandle(options.batcherId).query(batcherViewQuery),
        );
        readings.push({ at: Date.now(), view });
        if (readings.length > 20_000) readings.splice(0, 10_000);
      } catch {
        // The batcher's worker (in `clotho api`) or the server is down: nothing to read now.
      }
      await pause(interval);
    }
  })();

  const receivedIn = (view: BatcherView, envId: number) => view.metrics.counters.perEnv[String(envId)]?.received ?? 0;

  // The trainer's log, read incrementally: complete lines only.
  const events: TrainerEvent[] = [];
  let offset = 0;
  let rest = '';
  const readLog = () => {
    let size = 0;
    try {
      size = statSync(options.trainerLog).size;
    } catch {
      return events;
    }
    if (size <= offset) return events;
    const fd = openSync(options.trainerLog, 'r');
    try {
      const buffer = Buffer.alloc(size - offset);
      readSync(fd, buffer, 0, buffer.length, offset);
      offset = size;
      const parts = (rest + buffer.toString('utf8')).split('\n');
      rest = parts.pop()!;
      for (const part of parts) {
        if (!part.trim()) continue;
        try {
          events.push(JSON.parse(part) as TrainerEvent);
        } catch {
          // a torn line: `readTrainerLog` counts those at the end
        }
      }
    } finally {
      closeSync(fd);
    }
    return events;
  };

  return {
    latest: () => readings.at(-1),
    received(envId) {
      const last = readings.at(-1);
      return last && receivedIn(last.view, envId);
    },
    receivedAfter(envId, since, count) {
      return readings.find((r) => r.at > since && receivedIn(r.view, envId) > count)?.at;
    },
    trainerEvents: readLog,
    ackAfter(since) {
      return readLog().find((e) => e.ev === 'acked' && e.status === 200 && e.t > since)?.t;
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
