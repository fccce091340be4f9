import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { afterAll, inject } from 'vitest';
import { ensureTemporalCli, startDevServer, type DevServer } from '../../temporal-dev/index.js';

/** The suite's shared Temporal server, as a connection and a client on its namespace. */
export interface TestTemporal {
  address: string;
  namespace: string;
  connection: Connection;
  client: Client;
}

let shared: Promise<TestTemporal> | undefined;

/** Connects once per test file to the server `test/global-setup.ts` provides; closed after the file. */
export function testConnection(): Promise<TestTemporal> {
  shared ??= (async () => {
    const address = inject('temporalAddress');
    const namespace = inject('temporalNamespace');
    const connection = await Connection.connect({ address });
    return { address, namespace, connection, client: new Client({ connection, namespace }) };
  })();
  return shared;
}

// Registered while the importing test file is collected, so the file's connection closes with it.
afterAll(async () => {
  const current = shared;
  shared = undefined;
  if (current) await (await current).connection.close();
});

/** An id no other test (or earlier run against a reused server) has used: `<prefix>-<time>-<random>`. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomUUID().slice(0, 8)}`;
}

/** A task queue of this test's own, so workers of parallel tests never take each other's tasks. */
export function uniqueTaskQueue(prefix: string): string {
  return uniqueId(`${prefix}-tq`);
}

/**
 * A dev server of the caller's own, for crash tests: kill it (`server.kill()` is SIGKILL) and start
 * another on the same `dbFile` (and, to keep clients' address, the same `port`) to see what survived.
 */
export async function startIsolatedDevServer(options: { dbFile: string; port?: number }): Promise<DevServer> {
  return startDevServer({
    cliPath: await ensureTemporalCli(),
    stateDir: dirname(options.dbFile),
    dbFilename: options.dbFile,
    logFile: `${options.dbFile}.log`,
    port: options.port ?? 0,
    headless: true,
  });
}

/**
 * Whether a workflow has nothing under way that will add to its history by itself: no workflow task scheduled or
 * running, and every signal it sent delivered (or failed). What happens next comes from outside (a signal, a child).
 */
export async function settled(handle: WorkflowHandle): Promise<boolean> {
  const events = (await handle.fetchHistory()).events ?? [];
  const signalled = new Set<string>();
  let sent: string[] = [];
  let taskOpen = false;
  for (const event of events) {
    const id = String(event.eventId);
    if (event.signalExternalWorkflowExecutionInitiatedEventAttributes) sent.push(id);
    const done =
      event.externalWorkflowExecutionSignaledEventAttributes?.initiatedEventId ??
      event.signalExternalWorkflowExecutionFailedEventAttributes?.initiatedEventId;
    if (done !== undefined && done !== null) signalled.add(String(done));
    if (event.workflowTaskScheduledEventAttributes) taskOpen = true;
    if (event.workflowTaskCompletedEventAttributes) taskOpen = false;
  }
  sent = sent.filter((id) => !signalled.has(id));
  return !taskOpen && sent.length === 0;
}
