import { ChildWorkflowFailure, ParentClosePolicy, TimeoutFailure, defineQuery, type ChildWorkflowOptions } from '@temporalio/workflow';
import type { EnvRunInput, EnvRunProgress, RolloutGroupResult } from '../schema/rollout.js';
import type { GroupRef } from './batcher-state.js';
import { ENVIRONMENT, ITEM_INDEX, RUN_ID, STATUS } from './search-attributes.js';

/** What an env-run answers when asked how far it is. */
export interface EnvRunStatus extends EnvRunProgress {
  total: number;
  inFlight: number;
}

export const envRunStatusQuery = defineQuery<EnvRunStatus>('envRunStatus');

/** Workflow id of item i's rollout group: starting the same item twice is refused by Temporal. */
export function rolloutGroupId(runId: string, environment: string, itemIndex: number): string {
  return `clotho/${runId}/${environment}/item-${itemIndex}`;
}

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

/** The innermost cause of a child's failure: what went wrong, not the wrapping "child workflow failed". */
export function causeOf(error: unknown): string {
  let current = error as { message?: string; cause?: unknown } | undefined;
  while (current?.cause) current = current.cause as typeof current;
  return current?.message ?? String(error);
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
