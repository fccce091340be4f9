import { whileTemporalOutOfReach } from './temporal-reach.js';
import { setMaxListeners } from 'node:events';
import { WorkflowFailedError, type Client, type Connection } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { EnvRunStatus, RolloutGroupResult } from '../schema/rollout.js';
import type { StoredGroup } from '../schema/scored-data.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { envRunStatusQuery, rolloutGroupId } from '../workflows/messages.js';
import type { FinishedGroup } from './wandb/atropos-metrics.js';

export interface GroupFeedOptions {
  client: Client;
  connection: Connection;
  runId: string;
  environment: string;
  /** Workflow id of the env-run that starts the groups. */
  envRunId: string;
  store: TrajectoryStore;
  /** Groups watched at once: the run's max_groups_in_flight and some, so one slow group holds up none. */
  concurrency: number;
  onGroup(group: FinishedGroup): void;
  /** Called after each reading of the env-run's status. */
  onPoll?(status: EnvRunStatus): Promise<void> | void;
  /** @default 1000 */
  pollMs?: number;
}

export interface GroupFeed {
  /**
   * Reports every group the env-run started that this feed has not reported yet, then passes its last status to
   * `onPoll`, and stops (call it when the run has ended).
   */
  drain(): Promise<void>;
  /** Stops at once; groups still running are not reported. */
  stop(): Promise<void>;
}

/**
 * Follows an env-run's rollout groups from outside, as they finish, without touching the workflows: its status
 * query says how many items it started; each item's rollout-group workflow (its id is deterministic) is awaited
 * for its result, described for its start and close times, and a scored group is read from the store. Groups
 * that closed before the feed began (a resumed run) are skipped.
 */
export function followGroups(options: GroupFeedOptions): GroupFeed {
  const { client, connection, store } = options;
  const pollMs = options.pollMs ?? 1000;
  const abort = new AbortController();
  // Every call in flight (a poll, each group watched) listens on the one signal.
  setMaxListeners(options.concurrency + 16, abort.signal);
  const began = Date.now();
  const rpc = <T>(fn: () => Promise<T>) => connection.withAbortSignal(abort.signal, fn);
  const pause = (ms = pollMs) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const waiting: number[] = [];
  const watching = new Set<Promise<void>>();
  let next = 0;

  const watch = async (itemIndex: number) => {
    const handle = client.workflow.getHandle(rolloutGroupId(options.runId, options.environment, itemIndex));
    // Undefined when the group's workflow failed (retries ran out): a failed group, never a score.
    let result: RolloutGroupResult | undefined;
    for (;;) {
      try {
        result = (await whileTemporalOutOfReach(() => rpc(() => handle.result()), { signal: abort.signal })) as RolloutGroupResult;
        break;
      } catch (error) {
        if (abort.signal.aborted) return;
        // The env-run counted the item before its child started: the child exists within moments.
        if (error instanceof WorkflowNotFoundError) await pause(Math.min(pollMs, 100));
        else if (error instanceof WorkflowFailedError) break;
        else throw error;
      }
    }
    const { startTime, closeTime } = await rpc(() => handle.describe());
    if (closeTime && closeTime.getTime() < began) return;
    const seconds = closeTime ? (closeTime.getTime() - startTime.getTime()) / 1000 : undefined;
    if (!result) return options.onGroup({ itemIndex, status: 'failed', scores: [], seconds });
    // Gone already when `clotho api --retention ack` deleted it once trained on: reported without its samples.
    const group = result.status === 'scored' && result.group ? await store.tryGet<StoredGroup>(result.group.key) : undefined;
    options.onGroup({ itemIndex, status: result.status, scores: result.scores, metrics: result.metrics, seconds, group });
  };

  const pump = () => {
    while (watching.size < options.concurrency && waiting.length > 0) {
      // A group that cannot be read after retries is left out of the charts; it is in the run's results regardless.
      const task = watch(waiting.shift()!).catch(() => undefined);
      watching.add(task);
      void task.finally(() => {
        watching.delete(task);
        pump();
      });
    }
  };

  /** Reads the env-run's status and starts watching the items it started since the last reading. */
  const read = async () => {
    const status = await rpc(() => client.workflow.getHandle(options.envRunId).query(envRunStatusQuery)).catch(() => undefined);
    if (!status) return undefined;
    for (; next < status.nextItem; next++) waiting.push(next);
    pump();
    return status;
  };
  const poll = async () => {
    const status = await read();
    if (status) await options.onPoll?.(status);
  };

  let polling = true;
  const loop = (async () => {
    while (polling && !abort.signal.aborted) {
      await poll();
      if (polling) await pause();
    }
  })();

  const settled = async () => {
    while (watching.size > 0 || waiting.length > 0) await Promise.all([...watching]);
  };
  return {
    async drain() {
      polling = false;
      await loop;
      // The last reading is passed on once every group it counts has been reported.
      const status = await read();
      await settled();
      if (status) await options.onPoll?.(status);
      abort.abort();
    },
    async stop() {
      polling = false;
      abort.abort();
      waiting.length = 0;
      await loop;
      await settled();
    },
  };
}
