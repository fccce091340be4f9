import { proxyActivities, proxyLocalActivities, type ActivityInterfaceFor, type ActivityOptions } from '@temporalio/workflow';
import type { StepOptions } from '../schema/rollout.js';

/** Temporal activity options for one step, from its configured retry policy and timeouts. */
export function activityOptions(step: StepOptions, taskQueue: string): ActivityOptions {
  return {
    taskQueue,
    startToCloseTimeout: step.startToCloseTimeoutMs,
    heartbeatTimeout: step.heartbeatTimeoutMs,
    retry: retryPolicy(step),
  };
}

/** The step's retry policy; 0 attempts means unlimited, which the SDK spells as no maximum at all. */
export function retryPolicy(step: StepOptions) {
  return {
    initialInterval: step.initialIntervalMs,
    backoffCoefficient: step.backoffCoefficient,
    maximumInterval: step.maximumIntervalMs,
    ...(step.maximumAttempts > 0 ? { maximumAttempts: step.maximumAttempts } : {}),
  };
}

/**
 * The activities of one step: on `taskQueue`, or as local activities in this workflow's worker when the step
 * is configured `local` (same retry policy and timeout, no task-queue round trip); `summary` names them in the UI.
 */
export function stepActivities<A extends object>(step: StepOptions, taskQueue: string, summary?: string): ActivityInterfaceFor<A> {
  const named = summary === undefined ? {} : { summary };
  if (!step.local) return proxyActivities<A>({ ...activityOptions(step, taskQueue), ...named });
  return proxyLocalActivities<A>({ startToCloseTimeout: step.startToCloseTimeoutMs, retry: retryPolicy(step), ...named });
}
