import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { ensureTemporalCli } from '../../../temporal-dev/index.js';
import { workflowBundle } from '../../../src/workers/bundle.js';

/**
 * Point 7 of issue 8: the histories a chaos run wrote are exported the way an operator would (`temporal workflow
 * show --output json`, the format the UI downloads too) and replayed against the current workflow code, so a
 * change that breaks determinism fails the suite with the history that shows it.
 */

/** A history as the CLI exports it: `{ events: [...] }`, enums and times as strings. */
export interface HistoryJson {
  events: HistoryEvent[];
}
export interface HistoryEvent {
  eventId: string;
  eventTime: string;
  eventType: string;
  [attributes: string]: unknown;
}

export interface ExportedHistory {
  /** `env-run`, `batcher`, `rollout item-12`, with the run's number when the workflow continued as new. */
  label: string;
  workflowId: string;
  runId: string;
  file: string;
  history: HistoryJson;
}

/** Every run of a workflow id, oldest first (a workflow that continued as new has several). */
export async function runsOf(client: Client, workflowId: string): Promise<string[]> {
  const runs: { runId: string; startTime: number }[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    runs.push({ runId: info.runId, startTime: info.startTime.getTime() });
  }
  return runs.sort((a, b) => a.startTime - b.startTime).map((r) => r.runId);
}

/** Exports one run's history with the `temporal` CLI into `dir`. */
export async function exportHistory(address: string, workflowId: string, runId: string, file: string): Promise<HistoryJson> {
  const { stdout } = await promisify(execFile)(
    await ensureTemporalCli(),
    ['workflow', 'show', '--workflow-id', workflowId, '--run-id', runId, '--address', address, '--output', 'json'],
    { maxBuffer: 512 << 20 },
  );
  await writeFile(file, stdout);
  return JSON.parse(stdout) as HistoryJson;
}

/** Exports every run of each workflow (label → id) into `dir`. */
export async function exportHistories(
  client: Client,
  address: string,
  dir: string,
  workflows: Record<string, string>,
): Promise<ExportedHistory[]> {
  await mkdir(dir, { recursive: true });
  const exported: ExportedHistory[] = [];
  for (const [name, workflowId] of Object.entries(workflows)) {
    const runs = await runsOf(client, workflowId);
    for (const [i, runId] of runs.entries()) {
      const label = runs.length > 1 ? `${name} (run ${i + 1} of ${runs.length})` : name;
      const file = join(dir, `${name.replace(/\W+/g, '-')}${runs.length > 1 ? `-run${i + 1}` : ''}.json`);
      exported.push({ label, workflowId, runId, file, history: await exportHistory(address, workflowId, runId, file) });
    }
  }
  return exported;
}

export interface ReplayOutcome {
  label: string;
  file: string;
  events: number;
  /** The replay's error (a nondeterminism error, typically); absent when it replayed. */
  error?: string;
}

/** Replays each history against today's workflow bundle. */
export async function replayHistories(histories: ExportedHistory[]): Promise<ReplayOutcome[]> {
  try {
    // Replay workers log every state change at INFO; only problems are news here.
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // This process has its runtime already.
  }
  const bundle = await workflowBundle();
  const outcomes: ReplayOutcome[] = [];
  for (const h of histories) {
    const outcome: ReplayOutcome = { label: h.label, file: h.file, events: h.history.events.length };
    try {
      await Worker.runReplayHistory({ workflowBundle: bundle }, h.history, h.workflowId);
    } catch (error) {
      const cause = (error as { cause?: Error }).cause;
      outcome.error = `${(error as Error).name}: ${(error as Error).message}${cause ? ` (${cause.message})` : ''}`;
    }
    outcomes.push(outcome);
  }
  return outcomes;
}

/** The workflow id of the first child the history saw complete after `since` (a group that was in flight at a kill). */
export function firstChildCompletedAfter(history: HistoryEvent[], since: number): string | undefined {
  const event = history.find((e) => e.eventType === 'EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED' && eventTime(e) > since);
  const attrs = event?.childWorkflowExecutionCompletedEventAttributes as { workflowExecution?: { workflowId?: string } } | undefined;
  return attrs?.workflowExecution?.workflowId;
}

/** Milliseconds since the epoch of an event (the CLI writes nanoseconds; Date keeps milliseconds). */
export const eventTime = (event: HistoryEvent): number => Date.parse(event.eventTime);
