import { ChildWorkflowFailure, ParentClosePolicy, TimeoutFailure, type ChildWorkflowOptions } from '@temporalio/workflow';
import type { GroupRef } from '../schema/batcher.js';
import type { EnvRunInput, RolloutGroupResult } from '../schema/rollout.js';
import { rolloutGroupId } from './messages.js';
import { ENVIRONMENT, ITEM_INDEX, RUN_ID, STATUS } from './search-attributes.js';

/**
 * How an env-run starts item i's rollout group: its deterministic id, search attributes to find it by, and the
 * group's deadline (Atropos's worker_timeout) when the run has one.
 */
export function rolloutGroupOptions(
  input: EnvRunInput,
  itemIndex: number,
): Pick<ChildWorkflowOptions, 'workflowId' | 'parentClosePolicy' | 'typedSearchAttributes' | 'workflowExecutionTimeout'> {
  return {
    workflowId: rolloutGroupId(input.runId, input.environment, itemIndex),
    parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    ...(input.groupTimeoutSeconds === undefined ? {} : { workflowExecutionTimeout: input.groupTimeoutSeconds * 1000 }),
    typedSearchAttributes: input.group.searchAttributes
      ? [
          { key: ENVIRONMENT, value: input.environment },
          { key: RUN_ID, value: input.runId },
          { key: ITEM_INDEX, value: itemIndex },
          { key: STATUS, value: 'running' },
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

/** A scored group as the batcher takes it: its store key is its idempotency key, so a repeat is ignored. */
export function deliveredGroup(result: RolloutGroupResult, envId: number, policyVersion: number | null): GroupRef {
  return {
    id: result.group!.key,
    ref: result.group!.key,
    envId,
    size: result.groupSize,
    policyVersion,
    receivedAt: Date.now(),
    ...(result.longestSequence === undefined ? {} : { longestSequence: result.longestSequence }),
  };
}
