import {
  ApplicationFailure,
  ChildWorkflowFailure,
  ParentClosePolicy,
  setHandler,
  TimeoutFailure,
  workflowInfo,
  type ChildWorkflowOptions,
} from '@temporalio/workflow';
import type { GroupRef } from '../schema/batcher.js';
import type { EnvRunInput, RolloutGroupResult } from '../schema/rollout.js';
import { batcherEndedSignal, rolloutGroupId, WORKFLOW_TASK_TIMEOUT_MS, type BatcherEnded } from './messages.js';
import { ENVIRONMENT, ITEM_INDEX, RUN_ID, STATUS, VERSION, VERSION_MEMO } from './search-attributes.js';

/**
 * The Clotho version that started this workflow's run, from its memo (deterministic: the memo is in the history).
 * Children carry it on, so every workflow of a run records the version that started the run.
 */
export function runVersion(): string | undefined {
  const version = workflowInfo().memo?.[VERSION_MEMO];
  return typeof version === 'string' ? version : undefined;
}

/** A child's memo and version attribute: the run's version (`runVersion()`), when the run recorded one. */
export function versionTags(version: string | undefined): {
  memo?: Record<string, unknown>;
  version: { key: typeof VERSION; value: string }[];
} {
  return version === undefined ? { version: [] } : { memo: { [VERSION_MEMO]: version }, version: [{ key: VERSION, value: version }] };
}

/**
 * How an env-run starts item i's rollout group: its deterministic id, search attributes to find it by, the run's
 * Clotho version (memo), and the group's deadline (Atropos's worker_timeout) when the run has one.
 */
export function rolloutGroupOptions(
  input: Pick<EnvRunInput, 'runId' | 'environment' | 'groupTimeoutSeconds'> & { searchAttributes: boolean },
  itemIndex: number,
  runVersion: string | undefined,
): Pick<
  ChildWorkflowOptions,
  'workflowId' | 'parentClosePolicy' | 'typedSearchAttributes' | 'workflowExecutionTimeout' | 'workflowTaskTimeout' | 'memo'
> {
  const { memo, version } = versionTags(runVersion);
  return {
    ...(memo ? { memo } : {}),
    workflowId: rolloutGroupId(input.runId, input.environment, itemIndex),
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT_MS,
    ...(input.groupTimeoutSeconds === undefined ? {} : { workflowExecutionTimeout: input.groupTimeoutSeconds * 1000 }),
    typedSearchAttributes: input.searchAttributes
      ? [
          { key: ENVIRONMENT, value: input.environment },
          { key: RUN_ID, value: input.runId },
          { key: ITEM_INDEX, value: itemIndex },
          { key: STATUS, value: 'running' },
          ...version,
        ]
      : undefined,
  };
}

/** Whether a child failed because it ran past its deadline (the group's worker_timeout), not because it broke. */
export function timedOut(error: unknown): boolean {
  return error instanceof ChildWorkflowFailure && error.cause instanceof TimeoutFailure;
}

/** A group given up at its deadline: dropped, with nothing to deliver or score. */
export function timedOutGroup(itemIndex: number, groupSize: number, policyVersion: number | null): RolloutGroupResult {
  return { itemIndex, status: 'dropped', dropReason: 'timeout', scores: [], meanScore: 0, groupSize, tokens: 0, turns: 0, policyVersion };
}

/** A group in the store as the batcher takes it, by its key (also its idempotency key). */
export function storedGroupRef(key: string, size: number, envId: number, policyVersion: number | null, longestSequence?: number): GroupRef {
  return {
    id: key,
    ref: key,
    envId,
    size,
    policyVersion,
    receivedAt: Date.now(),
    ...(longestSequence === undefined ? {} : { longestSequence }),
  };
}

/**
 * Listens for `batcherEndedSignal` (the batcher a run feeds was ended for a new training run, docs/guide/train.md: "What /register
 * means"). `ended()` joins the run's wait conditions; `check()` then fails the run, naming the batcher and why: a run
 * waiting for room would otherwise wait for a batcher that will never push any.
 */
export function watchBatcherEnd(): { ended: () => boolean; check: () => void } {
  let end: BatcherEnded | undefined;
  setHandler(batcherEndedSignal, (ended) => {
    end ??= ended;
  });
  return {
    ended: () => end !== undefined,
    check: () => {
      if (!end) return;
      throw ApplicationFailure.nonRetryable(
        `the batcher this run feeds, ${end.batcherId}, was ended (${end.reason}): start the environment again for the new training run`,
        'BatcherEnded',
      );
    },
  };
}
