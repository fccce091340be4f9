import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { LogEntry } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { failureLog } from './failure-log.js';

const entry = (message: string, meta?: Record<string, unknown>): LogEntry => ({
  level: 'WARN',
  message,
  timestampNanos: BigInt(Date.UTC(2026, 10, 29)) * 1_000_000n,
  ...(meta ? { meta } : {}),
});

describe('failureLog', () => {
  it('prints each distinct failure once and keeps every entry, stack included, in its file', async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'clotho-failure-log-')), 'logs', 'worker.log');
    const printed: string[] = [];
    const take = failureLog({ file, print: (line) => printed.push(line) });
    const down = ApplicationFailure.create({ type: 'ConnectionError', message: 'no healthy inference server for 30000 ms (http://a/v1)' });
    for (const item of [1, 2, 3]) {
      expect(take(entry('Activity failed', { activityType: 'takeTurns', workflowId: `item-${item}`, error: down }))).toBe(true);
    }
    const raise = new TypeError("Cannot read properties of undefined (reading 'answer')\n    at score (env.ts:3)");
    expect(take(entry('Activity failed', { activityType: 'takeTurns', error: raise }))).toBe(true);
    expect(take(entry('Workflow failed', { workflowType: 'rolloutGroup', error: down }))).toBe(true);
    // Entries without an error are the logger's to print as before.
    expect(take(entry('Worker state changed', { state: 'STOPPING' }))).toBe(false);

    expect(printed).toEqual([
      `takeTurns: activity failed, ConnectionError: no healthy inference server for 30000 ms (http://a/v1) (once per kind; stack traces in ${file})`,
      `takeTurns: activity failed, TypeError: Cannot read properties of undefined (reading 'answer') (once per kind; stack traces in ${file})`,
      `rolloutGroup: workflow failed, ConnectionError: no healthy inference server for 30000 ms (http://a/v1) (once per kind; stack traces in ${file})`,
    ]);
    const logged = await readFile(file, 'utf8');
    expect(logged.match(/Activity failed/g)).toHaveLength(4);
    expect(logged).toContain('item-3');
    expect(logged).toContain('at score (env.ts:3)');
    expect(logged).toContain('2026-11-29T00:00:00.000Z [WARN] Workflow failed');
  });
});
