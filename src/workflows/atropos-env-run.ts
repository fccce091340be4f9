import { patched, proxyActivities, startChild } from '@temporalio/workflow';
import type { AtroposActivities, AtroposEnvRunInput, AtroposGroupResult, AtroposProgress } from '../schema/atropos.js';
import { atroposEvaluation, atroposHooks, atroposStore } from './atropos-env-run-hooks.js';
import { atroposRolloutGroup } from './atropos-rollout-group.js';
import { activityOptions } from './activity-options.js';
import { batcherDrops, initialAtroposProgress, outOfItems, recordAtroposResults, recordRestore } from './atropos-env-run-state.js';
import { runEnvLoop } from './env-run-loop.js';
import type { EnvRunStrategy, Taken } from './env-run-strategy.js';
import { rolloutGroupOptions, runVersion } from './rollout-children.js';

/**
 * Drives an Atropos environment through a run with the env-run loop (`runEnvLoop`), as envRun drives Clotho's own: a
 * durable cursor over the environment's `get_next_item` (each item taken once by `atroposNextItem` on the Python worker
 * and kept in this history, so a replay or a restarted worker never serves an item twice), items that groups put back
 * (Atropos's backlog) taken before new ones, each group an `atroposRolloutGroup` child with the ids of Clotho's groups
 * (`clotho/<run>/<env>/item-<i>`, i counting the groups started). Declined and filtered groups are counted by Atropos's
 * reason, a failed one by its cause; checkpoints, `wandb_log` and `evaluate()` run as hooks of the loop.
 */
export async function atroposEnvRun(input: AtroposEnvRunInput): Promise<AtroposProgress> {
  const progress = input.progress ?? initialAtroposProgress();
  const version = runVersion();
  const { steps, taskQueues } = input;
  const { atroposNextItem } = proxyActivities<AtroposActivities>(activityOptions(steps.next, taskQueues.atropos));
  // Where the worker puts items too large for history (and reads a checkpoint kept there).
  const store = atroposStore(input);
  // Runs started before checkpoints, metrics, evaluations and drops reported to the batcher replay without them.
  const hooked = patched('atropos-run-hooks');
  const hooks = hooked ? atroposHooks(input, progress) : undefined;
  // Runs started before items came several to a call take them one call each.
  const batched = patched('atropos-cursor-batch');

  /**
   * The next item: one put back first, else the cursor's; `none` once the iterator is exhausted. The cursor gives as
   * many items as `wanted` in one call; those a change of room leaves unlaunched wait first in the backlog. Under
   * `serve` (`itemWait`) None is none for now: the cursor is asked again once the loop's wait is over (`ask`).
   */
  const take = async (wanted: number, ask: boolean): Promise<Taken<unknown>> => {
    if (progress.backlog.length > 0) return { item: progress.backlog.shift() };
    if (progress.exhausted) return 'none';
    if (!ask) return 'later';
    const at = progress.cursor;
    const count = batched ? { count: wanted } : {};
    const next = await atroposNextItem(
      hooked ? { cursor: at, checkpoint: progress.checkpoint ?? null, ...count, store } : { cursor: at, ...count, store },
    );
    recordRestore(progress, at, next.restoredFrom, next.fastForwarded);
    const items = next.items ?? (next.exhausted ? [] : [next.item]);
    progress.cursor += items.length;
    if (next.exhausted && !input.itemWait) progress.exhausted = true;
    progress.backlog.push(...items);
    if (progress.backlog.length > 0) return { item: progress.backlog.shift() };
    return progress.exhausted ? 'none' : 'later';
  };

  const strategy: EnvRunStrategy<unknown, AtroposGroupResult> = {
    groupSize: input.groupSize,
    deliver: { step: steps.deliver, taskQueue: taskQueues.workflows },
    take,
    start: (itemIndex, item, policyVersion) => {
      const { runId, environment, storeRoot, searchAttributes } = input;
      return startChild(atroposRolloutGroup, {
        ...rolloutGroupOptions(input, itemIndex, version),
        args: [
          {
            runId,
            environment,
            itemIndex,
            item,
            storeRoot,
            taskQueue: taskQueues.atropos,
            collect: steps.collect,
            policyVersion,
            searchAttributes,
            ...(input.maxTokenLen === undefined ? {} : { maxTokenLen: input.maxTokenLen }),
          },
        ],
      });
    },
    timedOut: (itemIndex, policyVersion) => ({
      itemIndex,
      status: 'declined',
      reason: 'timeout',
      groups: [],
      scores: [],
      dropped: {},
      backlog: [],
      policyVersion,
    }),
    settle(results) {
      const deliveries = recordAtroposResults(progress, results);
      // Runs started before drops were reported to the batcher count them in their progress only.
      return { deliveries, dropped: hooked ? batcherDrops(results) : {} };
    },
    outOfItems: () => outOfItems(progress),
    ...(hooked ? { evaluation: atroposEvaluation(input), ...hooks } : {}),
  };
  return runEnvLoop(input, progress, strategy);
}
