import { allHandlersFinished, condition, continueAsNew, proxyActivities, setHandler, startChild, workflowInfo } from '@temporalio/workflow';
import type { TrajectoryActivities } from '../activities/trajectories.js';
import type { AtroposActivities, AtroposEnvRunInput, AtroposGroupResult, AtroposProgress } from '../schema/atropos.js';
import type { StoreRef } from '../schema/rollout.js';
import { activityOptions } from './activity-options.js';
import { atroposRolloutGroup } from './atropos-rollout-group.js';
import { initialProgress, recordFailure } from './env-run-state.js';
import { causeOf, envRunStatusQuery } from './messages.js';
import { rolloutGroupOptions, runVersion, timedOut } from './rollout-children.js';

/**
 * Drives an Atropos environment through a run, as envRun drives Clotho's own: a durable cursor over the
 * environment's `get_next_item` (each item taken once by `atroposNextItem` on the Python worker and kept in this
 * history, so a replay or a restarted worker never serves an item twice), items that groups put back (Atropos's
 * backlog) taken before new ones, at most `maxInFlight` groups as `atroposRolloutGroup` children with the ids of
 * Clotho's groups (`clotho/<run>/<env>/item-<i>`, i counting the groups started), and finished groups delivered to
 * the JSONL file in order of completion. Declined and filtered groups are counted by Atropos's reason; a failed one
 * by its cause. One loop issues every command, in an order fixed by the history alone.
 */
export async function atroposEnvRun(input: AtroposEnvRunInput): Promise<AtroposProgress> {
  const progress: AtroposProgress = input.progress ?? { ...initialProgress(), dropped: {}, cursor: 0, exhausted: false, backlog: [] };
  const version = runVersion();
  const { sink, steps, taskQueues } = input;
  const { atroposNextItem } = proxyActivities<AtroposActivities>(activityOptions(steps.next, taskQueues.atropos));
  const { deliverToJsonl } = proxyActivities<TrajectoryActivities>(activityOptions(steps.deliver, taskQueues.workflows));
  const inFlight = new Set<number>();
  const finished: AtroposGroupResult[] = [];
  setHandler(envRunStatusQuery, () => ({ ...progress, total: input.totalGroups, inFlight: inFlight.size }));

  const launch = async (itemIndex: number, item: unknown) => {
    inFlight.add(itemIndex);
    try {
      const child = await startChild(atroposRolloutGroup, {
        ...rolloutGroupOptions(input, itemIndex, version),
        args: [
          {
            runId: input.runId,
            environment: input.environment,
            itemIndex,
            item,
            storeRoot: input.storeRoot,
            taskQueue: taskQueues.atropos,
            collect: steps.collect,
            policyVersion: null,
            searchAttributes: input.searchAttributes,
          },
        ],
      });
      finished.push(await child.result());
    } catch (error) {
      if (timedOut(error)) {
        progress.completed++;
        progress.dropped.timeout = (progress.dropped.timeout ?? 0) + 1;
      } else recordFailure(progress, itemIndex, causeOf(error));
    } finally {
      inFlight.delete(itemIndex);
    }
  };

  /** The next item: one put back first, else the cursor's; undefined once the iterator is exhausted. */
  const take = async (): Promise<{ item: unknown } | undefined> => {
    if (progress.backlog.length > 0) return { item: progress.backlog.shift() };
    if (progress.exhausted) return undefined;
    const next = await atroposNextItem({ cursor: progress.cursor });
    if (next.exhausted) {
      progress.exhausted = true;
      return undefined;
    }
    progress.cursor++;
    return { item: next.item };
  };

  const deliver = async () => {
    const refs: StoreRef[] = [];
    for (const result of finished.splice(0)) {
      progress.completed++;
      progress.backlog.push(...result.backlog);
      for (const [reason, n] of Object.entries(result.dropped)) progress.dropped[reason] = (progress.dropped[reason] ?? 0) + n;
      if (result.status === 'declined') {
        // A group Atropos's filter emptied counts under the filter's reasons (above) alone.
        if (Object.keys(result.dropped).length === 0)
          progress.dropped[result.reason ?? 'declined'] = (progress.dropped[result.reason ?? 'declined'] ?? 0) + 1;
        continue;
      }
      const scores = result.scores.flat();
      progress.scoreSum += scores.reduce((a, b) => a + b, 0) / Math.max(scores.length, 1);
      progress.scoredGroups++;
      refs.push(...result.groups);
    }
    if (refs.length === 0) return;
    await deliverToJsonl({ path: sink.path, firstLine: progress.delivered, groups: refs });
    progress.delivered += refs.length;
  };

  const more = () => !workflowInfo().continueAsNewSuggested && progress.nextItem < input.totalGroups;
  for (;;) {
    while (more() && inFlight.size < input.maxInFlight) {
      const taken = await take();
      if (!taken) break;
      void launch(progress.nextItem++, taken.item);
    }
    if (finished.length > 0) {
      await deliver();
      continue;
    }
    // Out of items with nothing in flight: no group can put one back, so the run ends short of totalGroups.
    const starved = progress.exhausted && progress.backlog.length === 0;
    if (inFlight.size === 0 && (!more() || starved)) break;
    const seen = inFlight.size;
    await condition(() => finished.length > 0 || inFlight.size !== seen);
  }
  if (progress.nextItem < input.totalGroups && !(progress.exhausted && progress.backlog.length === 0)) {
    await condition(allHandlersFinished);
    return continueAsNew<typeof atroposEnvRun>({ ...input, progress });
  }
  return progress;
}
