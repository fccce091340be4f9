import type { EnvRunStatus } from '../workflows/env-run.js';

/** One line of run progress: done of total, rate, mean score, failures, drops by reason. */
export function progressLine(status: EnvRunStatus, elapsedMs: number, completedAtStart: number): string {
  const rate = ((status.completed - completedAtStart) / Math.max(elapsedMs, 1)) * 1000;
  const mean = status.scoredGroups > 0 ? (status.scoreSum / status.scoredGroups).toFixed(3) : '–';
  const drops = Object.entries(status.dropped);
  const dropped = drops.reduce((sum, [, n]) => sum + (n ?? 0), 0);
  const reasons = drops.length > 0 ? ` (${drops.map(([reason, n]) => `${reason} ${n}`).join(', ')})` : '';
  return (
    `groups ${status.completed}/${status.total} · ${status.inFlight} in flight · ${rate.toFixed(2)} groups/s · ` +
    `mean score ${mean} · failed ${status.failed} · dropped ${dropped}${reasons}`
  );
}
