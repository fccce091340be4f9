import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { formatWithOptions } from 'node:util';
import type { LogEntry } from '@temporalio/worker';

/**
 * The worker's log entries that carry an error (`Activity failed`, `Workflow failed`: dozens of lines of stack each,
 * and repeated on every retry of every group while a server is down), kept whole in `file`, and each distinct failure
 * printed once as one line: what failed, its failure type and its message. Returns whether it took the entry.
 */
export function failureLog(options: { file: string; print: (line: string) => void }): (entry: LogEntry) => boolean {
  const seen = new Set<string>();
  let opened = false;
  return (entry) => {
    const error = entry.meta?.error;
    if (error === undefined) return false;
    if (!opened) mkdirSync(dirname(options.file), { recursive: true });
    opened = true;
    const at = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
    appendFileSync(options.file, `${at} [${entry.level}] ${entry.message} ${formatWithOptions({ colors: false }, entry.meta)}\n`);
    const line = failureLine(entry, error);
    if (!seen.has(line)) {
      seen.add(line);
      options.print(`${line} (once per kind; stack traces in ${options.file})`);
    }
    return true;
  };
}

/** `takeTurns failed, ConnectionError: no healthy inference server …`: the same for every repeat of one failure. */
function failureLine(entry: LogEntry, error: unknown): string {
  const meta = entry.meta ?? {};
  const subject = String(meta.activityType ?? meta.workflowType ?? 'worker');
  const { type, name, message } = (error ?? {}) as { type?: unknown; name?: unknown; message?: unknown };
  const kind = typeof type === 'string' ? type : typeof name === 'string' ? name : 'Error';
  const firstLine = String(message ?? error).split('\n')[0];
  return `${subject}: ${entry.message.toLowerCase()}, ${kind}: ${firstLine}`;
}
