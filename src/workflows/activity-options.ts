import type { ActivityOptions } from '@temporalio/workflow';
import type { StepOptions } from '../schema/rollout.js';

/** Temporal activity options for one step, from its configured retry policy and timeouts. */
export function activityOptions(step: StepOptions, taskQueue: string): ActivityOptions {
  return {
    taskQueue,
    startToCloseTimeout: step.startToCloseTimeoutMs,
    heartbeatTimeout: step.heartbeatTimeoutMs,
    retry: {
      initialInterval: step.initialIntervalMs,
      backoffCoefficient: step.backoffCoefficient,
      maximumInterval: step.maximumIntervalMs,
      maximumAttempts: step.maximumAttempts,
    },
  };
}
