import type { Connection, WorkflowHandle } from '@temporalio/client';
import type { EnvRunResult } from '../schema/rollout.js';
import { envRunStatusQuery, type envRun, type EnvRunStatus } from '../workflows/env-run.js';
import type { CommandIo } from './io.js';

/** Environment metrics past this many stay in the workflow's result, off the progress line. */
const MAX_METRICS_SHOWN = 6;

/** One line of run progress: done of total, rate, mean score, the environment's metrics, failures, drops by reason. */
export function progressLine(status: EnvRunStatus, elapsedMs: number, completedAtStart: number): string {
  const rate = ((status.completed - completedAtStart) / Math.max(elapsedMs, 1)) * 1000;
  const mean = status.scoredGroups > 0 ? (status.scoreSum / status.scoredGroups).toFixed(3) : '–';
  const drops = Object.entries(status.dropped);
  const dropped = drops.reduce((sum, [, n]) => sum + (n ?? 0), 0);
  const reasons = drops.length > 0 ? ` (${drops.map(([reason, n]) => `${reason} ${n}`).join(', ')})` : '';
  const metrics = Object.entries(status.metricSums ?? {})
    .slice(0, MAX_METRICS_SHOWN)
    .map(([name, sum]) => ` · ${name} ${(sum / Math.max(status.scoredGroups, 1)).toFixed(3)}`)
    .join('');
  return (
    `groups ${status.completed}/${status.total} · ${status.inFlight} in flight · ${rate.toFixed(2)} groups/s · ` +
    `mean score ${mean}${metrics} · failed ${status.failed} · dropped ${dropped}${reasons}`
  );
}

/**
 * Shows an env-run's progress once a second (a status line on a terminal, a line every 10 s otherwise) until it
 * ends, or until `signal` aborts: then its calls to Temporal are cancelled, so the connection can close under it.
 */
export async function watchProgress(
  handle: WorkflowHandle<typeof envRun>,
  io: CommandIo,
  connection: Connection,
  signal: AbortSignal,
): Promise<EnvRunResult> {
  const started = Date.now();
  let completedAtStart: number | undefined;
  let lastLine = 0;
  // One query at a time, awaited before returning: the connection must not close under a query's retry.
  let polling: Promise<void> = Promise.resolve();
  const poll = async () => {
    const status = await handle.query(envRunStatusQuery).catch(() => undefined);
    if (!status) return;
    completedAtStart ??= status.completed;
    const line = progressLine(status, Date.now() - started, completedAtStart);
    if (io.status) io.status(line);
    else if (Date.now() - lastLine >= 10_000) {
      lastLine = Date.now();
      io.out(line);
    }
  };
  const timer = setInterval(() => (polling = polling.then(poll)), 1_000);
  try {
    return await connection.withAbortSignal(signal, () => handle.result());
  } finally {
    clearInterval(timer);
    await polling;
  }
}
