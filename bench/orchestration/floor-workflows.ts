/**
 * The least a workflow per group can cost: a parent that keeps children in flight, as an env-run does, and children
 * that do nothing but return. What Temporal's server and SDK cost per group before any step of Clotho's runs.
 */
import { executeChild, workflowInfo } from '@temporalio/workflow';

export async function emptyGroup(): Promise<number> {
  return 1;
}

/** Runs `groups` empty children, `inFlight` at once, each started as the one before it in its lane ends. */
export async function emptyGroups(groups: number, inFlight: number): Promise<number> {
  let next = 0;
  const { workflowId } = workflowInfo();
  const lane = async () => {
    while (next < groups) await executeChild(emptyGroup, { workflowId: `${workflowId}/item-${next++}`, workflowTaskTimeout: '5s' });
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return groups;
}
