/**
 * Where a steady-state group's time outside inference goes, read from histories: from the moment a finished group
 * frees a slot in the env-run to the moment the env-run sees the new group's result, less its inference call.
 */
import type { Client } from '@temporalio/client';
import { rolloutGroupId } from '../../src/workflows/messages.js';
import { msOf } from '../tool-use/history.js';
import { workflowRuns } from '../support.js';

/** The legs of a group's cycle, in order, as mean ms over the groups read. */
export const CYCLE_LEGS = {
  parent: 'a slot frees → the env-run starts the next group',
  start: '→ the server has started it',
  firstTask: '→ its first workflow task starts',
  toCall: '→ its inference call reaches the server',
  afterCall: 'the call answered → the group has completed',
  report: '→ the env-run sees it',
} as const;
export type Cycle = Record<keyof typeof CYCLE_LEGS, number>;

/**
 * The mean legs of `items`' cycles in env-run `runId` of `environment`. `calledAt` is when each item's inference
 * call reached the server (epoch ms, the clock the server's event times use) and `callMs` how long every call took.
 */
export async function readCycles(
  client: Client,
  runId: string,
  environment: string,
  items: number[],
  calledAt: Map<number, number>,
  callMs: number,
): Promise<Cycle> {
  const initiated = new Map<number, number>();
  const reported = new Map<number, number>();
  for (const run of await workflowRuns(client, runId)) {
    const history = await client.workflow.getHandle(runId, run.runId).fetchHistory();
    const itemOf = new Map<string, number>();
    for (const event of history.events ?? []) {
      const start = event.startChildWorkflowExecutionInitiatedEventAttributes;
      if (start) {
        const item = Number(start.workflowId!.slice(start.workflowId!.lastIndexOf('-') + 1));
        itemOf.set(String(event.eventId), item);
        initiated.set(item, msOf(event.eventTime));
      }
      const done = event.childWorkflowExecutionCompletedEventAttributes;
      if (done) reported.set(itemOf.get(String(done.initiatedEventId))!, msOf(event.eventTime));
    }
  }
  const freedAt = [...reported.values()].sort((a, b) => a - b);
  const sums: Cycle = { parent: 0, start: 0, firstTask: 0, toCall: 0, afterCall: 0, report: 0 };
  for (const item of items) {
    const events = (await client.workflow.getHandle(rolloutGroupId(runId, environment, item)).fetchHistory()).events!;
    const started = msOf(events[0]!.eventTime);
    const firstTask = msOf(events.find((e) => e.workflowTaskStartedEventAttributes)!.eventTime);
    const completed = msOf(events.at(-1)!.eventTime);
    const launched = initiated.get(item)!;
    // The slot it took: the last completion the env-run had seen when it started this group.
    const freed = freedAt.findLast((t) => t <= launched) ?? launched;
    const called = calledAt.get(item)!;
    sums.parent += launched - freed;
    sums.start += started - launched;
    sums.firstTask += firstTask - started;
    sums.toCall += called - firstTask;
    sums.afterCall += completed - (called + callMs);
    sums.report += reported.get(item)! - completed;
  }
  const mean = (x: number) => x / items.length;
  return {
    parent: mean(sums.parent),
    start: mean(sums.start),
    firstTask: mean(sums.firstTask),
    toCall: mean(sums.toCall),
    afterCall: mean(sums.afterCall),
    report: mean(sums.report),
  };
}
