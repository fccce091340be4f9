import { startChild } from '@temporalio/workflow';
import type { EnvRunInput, EnvRunResult, RolloutGroupResult } from '../schema/rollout.js';
import { runEvaluation } from './env-run-eval.js';
import { runEnvLoop } from './env-run-loop.js';
import type { EnvRunStrategy } from './env-run-strategy.js';
import { initialProgress, recordFinished } from './env-run-state.js';
import { rolloutGroupOptions, runVersion, timedOutGroup } from './rollout-children.js';
import { rolloutGroup } from './rollout-group.js';

/**
 * Drives one of Clotho's environments through a run with the env-run loop (`runEnvLoop`): item i is the index i,
 * each group a `rolloutGroup` child, a scored group delivered by its store key and a dropped one counted by its reason.
 * Feeding a batcher, the run keeps to its env's weighted share of the room (`roomForGroups`) and evaluates during
 * training when `input.evaluation` says so, each evaluation an `evaluation` child.
 */
export async function envRun(input: EnvRunInput): Promise<EnvRunResult> {
  const progress = input.progress ?? initialProgress();
  const { group } = input;
  // The Clotho version that started the run, carried to its groups (their memo and ClothoVersion).
  const version = runVersion();
  const strategy: EnvRunStrategy<null, RolloutGroupResult> = {
    groupSize: group.groupSize,
    deliver: { step: group.steps.deliver, taskQueue: group.taskQueues.env },
    take: () => ({ item: null }),
    start: (itemIndex, _item, policyVersion) =>
      startChild(rolloutGroup, {
        ...rolloutGroupOptions({ ...input, searchAttributes: group.searchAttributes }, itemIndex, version),
        args: [{ ...group, runId: input.runId, environment: input.environment, itemIndex, policyVersion }],
      }),
    timedOut: (itemIndex, policyVersion) => timedOutGroup(itemIndex, group.groupSize, policyVersion),
    settle(results) {
      const { kept, dropped } = recordFinished(progress, results);
      const deliveries = kept.map((result) => ({
        ref: result.group!,
        size: result.groupSize,
        policyVersion: result.policyVersion ?? null,
        ...(result.longestSequence === undefined ? {} : { longestSequence: result.longestSequence }),
      }));
      return { deliveries, dropped };
    },
    outOfItems: () => false,
    ...(input.evaluation
      ? { evaluation: { schedule: input.evaluation, start: (evals, step) => runEvaluation(input, input.evaluation!, evals, step) } }
      : {}),
  };
  return runEnvLoop(input, progress, strategy);
}
