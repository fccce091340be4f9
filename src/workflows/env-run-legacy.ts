import {
  condition,
  allHandlersFinished,
  continueAsNew,
  getExternalWorkflowHandle,
  patched,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatcherClientActivities } from '../activities/batcher.js';
import type { TrajectoryActivities } from '../activities/trajectories.js';
import type { EnvRunInput, EnvRunResult, RolloutGroupResult } from '../schema/rollout.js';
import { stepActivities } from './activity-options.js';
import type { envRun } from './env-run.js';
import { initialProgress, recordFailure, recordFinished } from './env-run-state.js';
import { causeOf, envRunStatusQuery, ingestGroupsSignal, recordDropsSignal } from './messages.js';
import { deliveredGroup, rolloutGroupOptions } from './rollout-children.js';
import { rolloutGroup } from './rollout-group.js';

/** Marks the point where a legacy env-run, running live on new code, stops launching and drains. */
export const DRAIN_LEGACY_ENV_RUN = 'clotho-drain-legacy-env-run';

/**
 * The env-run of Clotho ≤ 0.1.0, kept so that runs started on it still replay: deliveries beside launching, and
 * backpressure read by a local activity polled every second. Its command order could change on replay (the local
 * activity resolves earlier on replay than it first did), which stranded runs after a worker crash. Two changes
 * make it safe to resume: after the local activity the launch loop lets the activation's other branches issue
 * their commands first (their order when it first ran), and once it runs live on new code it drains and
 * continues as new onto `envRun`'s single loop. Remove with `deprecatePatch` once no such run is open.
 */
export async function legacyEnvRun(input: EnvRunInput): Promise<EnvRunResult> {
  const progress = input.progress ?? initialProgress();
  const { group, sink } = input;
  const { deliverToJsonl } = stepActivities<TrajectoryActivities>(group.steps.deliver, group.taskQueues.env);
  const { batcherRoom } = stepActivities<BatcherClientActivities>(group.steps.deliver, group.taskQueues.env);
  const inFlight = new Set<number>();
  const finished: RolloutGroupResult[] = [];
  setHandler(envRunStatusQuery, () => ({ ...progress, total: input.totalGroups, inFlight: inFlight.size }));

  const launch = async (itemIndex: number) => {
    inFlight.add(itemIndex);
    try {
      const child = await startChild(rolloutGroup, {
        ...rolloutGroupOptions(input, itemIndex),
        args: [{ ...group, runId: input.runId, environment: input.environment, itemIndex }],
      });
      finished.push(await child.result());
    } catch (error) {
      recordFailure(progress, itemIndex, causeOf(error));
    } finally {
      inFlight.delete(itemIndex);
    }
  };

  let delivering = 0;
  const deliver = async () => {
    const { kept, dropped } = recordFinished(progress, finished.splice(0));
    // Counted against the batcher's room from here until the groups are delivered, across every await below.
    delivering = kept.length;
    const batcher = sink.kind === 'batcher' ? getExternalWorkflowHandle(sink.workflowId) : undefined;
    if (batcher && sink.kind === 'batcher' && Object.keys(dropped).length > 0) {
      await batcher.signal(recordDropsSignal, { envId: sink.envId, dropped });
    }
    if (kept.length === 0) return;
    const refs = kept.map((result) => result.group!);
    if (sink.kind === 'jsonl') await deliverToJsonl({ path: sink.path, firstLine: progress.delivered, groups: refs });
    if (batcher && sink.kind === 'batcher') {
      // A signal is durable once sent: the batcher has the groups, and its idempotency keys ignore a repeat.
      await batcher.signal(ingestGroupsSignal, kept.map((result) => deliveredGroup(result, sink.envId, policyVersion)));
    }
    progress.delivered += refs.length;
    delivering = 0;
  };

  // Feeding a batcher, new groups wait while the env's groups in flight and queued would exceed
  // max_batches_offpolicy batches (Atropos's backpressure), and stop at the trainer's last step.
  let policyVersion = 0;
  let stopped = false;
  const room = async (): Promise<number> => {
    if (sink.kind !== 'batcher') return Infinity;
    const { currentStep, batchSize, queuedGroups, receivedGroups } = await batcherRoom({ workflowId: sink.workflowId, envId: sink.envId });
    policyVersion = currentStep;
    if (currentStep >= sink.stopAtStep) stopped = true;
    // A query may not yet see the last signals: groups delivered but not yet received count as queued, and so
    // do groups being delivered and groups finished while this activity ran.
    const inTransit = Math.max(0, progress.delivered - receivedGroups);
    const limit = Math.floor((sink.maxBatchesOffpolicy * Math.max(batchSize, group.groupSize)) / group.groupSize);
    return Math.max(0, limit - queuedGroups - inTransit - delivering - finished.length - inFlight.size);
  };

  const draining = () => workflowInfo().continueAsNewSuggested || patched(DRAIN_LEGACY_ENV_RUN);
  const more = () => !draining() && !stopped && progress.nextItem < input.totalGroups;

  // Deliveries run beside launching, so a slow sink never holds back new groups.
  let launching = true;
  const deliveries = (async () => {
    for (;;) {
      await condition(() => finished.length > 0 || !launching);
      if (finished.length === 0) return;
      await deliver();
    }
  })();

  for (;;) {
    const free = more() && inFlight.size < input.maxInFlight ? await room() : 0;
    await afterOtherBranches();
    let launched = 0;
    while (more() && launched < free && inFlight.size < input.maxInFlight) {
      void launch(progress.nextItem++);
      launched++;
    }
    if (!more() && inFlight.size === 0) break;
    // Wait for a free slot; with nothing in flight and no room in the batcher, look again in a second.
    const running = inFlight.size;
    if (running === 0) await sleep('1 second');
    else await condition(() => inFlight.size < running);
  }
  launching = false;
  await deliveries;

  if (progress.nextItem < input.totalGroups && !stopped) {
    await condition(allHandlersFinished);
    return continueAsNew<typeof envRun>({ ...input, progress });
  }
  return progress;
}

/**
 * Resolves once every other branch that this activation woke has run: a condition is checked only after the
 * activation's microtasks drain, so whatever they issue comes first, as when the awaited result arrived alone.
 */
async function afterOtherBranches(): Promise<void> {
  let ready = false;
  const settled = condition(() => ready);
  ready = true;
  await settled;
}
