import { WorkflowNotFoundError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { ConfigError } from '../config/config-error.js';
import { canFinish, CLOTHO_VERSION, finisherOf, REPLAY_BASELINE } from '../version.js';
import { VERSION, VERSION_MEMO } from '../workflows/search-attributes.js';

/**
 * What every workflow Clotho starts carries (ARCHITECTURE.md, "Replay and patches"): the Clotho version in its memo,
 * and as the `ClothoVersion` search attribute where the cluster has Clotho's search attributes.
 */
export function startedBy(searchAttributes: boolean) {
  return {
    memo: { [VERSION_MEMO]: CLOTHO_VERSION },
    ...(searchAttributes ? { typedSearchAttributes: [{ key: VERSION, value: CLOTHO_VERSION }] } : {}),
  };
}

/** The Clotho version a workflow recorded: its search attribute, else its memo; undefined when it recorded none. */
export function recordedVersion(info: Pick<WorkflowExecutionInfo, 'typedSearchAttributes' | 'memo'>): string | undefined {
  const attribute = info.typedSearchAttributes?.get(VERSION);
  if (typeof attribute === 'string') return attribute;
  const memo = info.memo?.[VERSION_MEMO];
  return typeof memo === 'string' ? memo : undefined;
}

/** Why this Clotho refuses a run started by `version`, and which version can finish it. */
export function refusal(what: string, workflowId: string, version: string | undefined, newRun = 'start a new run'): string {
  const started =
    version === undefined ? 'was started before Clotho recorded versions (Clotho 0.1.0 or older)' : `was started by Clotho ${version}`;
  const finisher = finisherOf(version);
  return (
    `${what} (workflow ${workflowId}) ${started}, older than the replay baseline of Clotho ${CLOTHO_VERSION} ` +
    `(${REPLAY_BASELINE}): this version cannot replay it. Finish it with Clotho ${finisher} ` +
    `(npm install clotho@${finisher}) or ${newRun}`
  );
}

/**
 * Refuses, before any worker polls, to resume a workflow this code cannot replay: one still running whose recorded
 * version is older than REPLAY_BASELINE, or that recorded none. A workflow that does not exist or has closed passes.
 */
export async function refuseUnreplayable(client: Client, what: string, workflowId: string, newRun?: string): Promise<void> {
  let description;
  try {
    description = await client.workflow.getHandle(workflowId).describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return;
    throw error;
  }
  if (description.status.name !== 'RUNNING') return;
  const version = recordedVersion(description);
  if (!canFinish(version)) throw new ConfigError([refusal(what, workflowId, version, newRun)]);
}
