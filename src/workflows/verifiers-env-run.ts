import { proxyActivities, startChild } from '@temporalio/workflow';
import type {
  VerifiersActivities,
  VerifiersEnvRunInput,
  VerifiersGroupResult,
  VerifiersProgress,
  VerifiersTask,
} from '../schema/verifiers.js';
import { activityOptions } from './activity-options.js';
import { runEnvLoop } from './env-run-loop.js';
import type { EnvRunStrategy, Taken } from './env-run-strategy.js';
import { rolloutGroupOptions, runVersion } from './rollout-children.js';
import { initialVerifiersProgress, recordVerifiersResults } from './verifiers-env-run-state.js';
import { verifiersRolloutGroup } from './verifiers-rollout-group.js';

/**
 * Drives a verifiers environment through a run with the env-run loop (`runEnvLoop`): a durable cursor over the run's
 * view of the taskset (`verifiersNextTasks` on the Python worker takes the tasks at the cursor, as many as the run has
 * slots free, and their wire data stays in this history, so a replay or a restarted worker never takes a task twice),
 * each task a `verifiersRolloutGroup` child with the ids of Clotho's groups (`clotho/<run>/<env>/item-<i>`).
 * Declined groups are counted by verifiers' reason; scored ones are delivered once, to the JSONL or the batcher, in
 * order of completion. Under `serve` (`input.cycle`) the view is taken again from its start once it ends, epoch after
 * epoch; under `process` and `evaluate` the run ends with it.
 */
export async function verifiersEnvRun(input: VerifiersEnvRunInput): Promise<VerifiersProgress> {
  const progress = input.progress ?? initialVerifiersProgress();
  const { steps, taskQueues } = input;
  const version = runVersion();
  const { verifiersNextTasks } = proxyActivities<VerifiersActivities>({
    ...activityOptions(steps.next, taskQueues.verifiers),
    summary: 'tasks',
  });

  const take = async (wanted: number): Promise<Taken<VerifiersTask>> => {
    if (progress.pending.length === 0 && !progress.exhausted) {
      const { tasks, exhausted } = await verifiersNextTasks({
        cursor: progress.cursor,
        count: Math.max(1, wanted),
        cycle: input.cycle === true,
      });
      progress.cursor += tasks.length;
      progress.exhausted = exhausted;
      progress.pending.push(...tasks);
    }
    const next = progress.pending.shift();
    return next === undefined ? 'none' : { item: next };
  };

  const strategy: EnvRunStrategy<VerifiersTask, VerifiersGroupResult> = {
    groupSize: input.groupSize,
    deliver: { step: steps.deliver, taskQueue: taskQueues.workflows },
    // Tasks at hand are answered without a promise: the loop's launches stay one synchronous pass.
    take: (wanted) => (progress.pending.length > 0 ? { item: progress.pending.shift()! } : take(wanted)),
    start: (itemIndex, task, policyVersion) =>
      startChild(verifiersRolloutGroup, {
        ...rolloutGroupOptions(input, itemIndex, version),
        args: [
          {
            runId: input.runId,
            environment: input.environment,
            itemIndex,
            task,
            groupSize: input.groupSize,
            taskQueues,
            steps: { episode: steps.episode, gather: steps.gather },
            generationParams: input.generationParams,
            policyVersion,
            searchAttributes: input.searchAttributes,
          },
        ],
      }),
    timedOut: (itemIndex, policyVersion) => ({
      itemIndex,
      status: 'declined',
      reason: 'timeout',
      scores: [],
      metrics: {},
      size: 0,
      policyVersion,
    }),
    settle: (results) => recordVerifiersResults(progress, results),
    outOfItems: () => progress.exhausted && progress.pending.length === 0,
  };
  return runEnvLoop(input, progress, strategy);
}
