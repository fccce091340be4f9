import { Client, Connection } from '@temporalio/client';
import { isServerListening } from '../../../temporal-dev/index.js';
import { causeOf } from '../../workflows/rollout-children.js';
import { ENVIRONMENT, ITEM_INDEX, MEAN_SCORE, STATUS } from '../../workflows/search-attributes.js';
import type { GroupStatus } from './model.js';

/** What Temporal's visibility says of one rollout-group workflow. */
export interface WorkflowFacts {
  environment: string;
  itemIndex: number;
  status: GroupStatus;
  /** The group's mean score, once scored or dropped. */
  meanScore: number | null;
  /** Why it failed (the innermost cause), or how it ended when it was terminated, cancelled or timed out. */
  note: string | null;
}

/** A read-only view of a run's rollout groups in Temporal. */
export interface RunWorkflows {
  /** The run's rollout groups, by `<environment>/item-<i>`. */
  list(runId: string): Promise<Map<string, WorkflowFacts>>;
  close(): Promise<void>;
}

/** Failures whose cause is fetched (one history read each); the rest show only their status. */
const FAILURES_EXPLAINED = 200;

/**
 * Connects to `TEMPORAL_ADDRESS`, or to a dev server already listening on the default address; undefined when none
 * answers. Never starts a server: the viewer only reads what a run left.
 */
export async function connectRunWorkflows(env: NodeJS.ProcessEnv = process.env): Promise<RunWorkflows | undefined> {
  const address = env.TEMPORAL_ADDRESS || '127.0.0.1:7233';
  const namespace = env.TEMPORAL_NAMESPACE || 'default';
  if (!(await isServerListening(address))) return undefined;
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  return {
    async list(runId) {
      const found = new Map<string, WorkflowFacts>();
      const failed: [string, string][] = [];
      const query = `ClothoRunId = "${runId.replace(/["\\]/g, '')}" AND WorkflowType = "rolloutGroup"`;
      for await (const info of client.workflow.list({ query })) {
        const attributes = info.typedSearchAttributes;
        const environment = attributes.get(ENVIRONMENT);
        const itemIndex = attributes.get(ITEM_INDEX);
        if (environment === undefined || itemIndex === undefined) continue;
        const closed = info.status.name;
        const clotho = attributes.get(STATUS);
        // A terminated or timed-out workflow never set its own status; the execution's says how it ended.
        const status: GroupStatus =
          closed === 'RUNNING' ? 'running' : closed === 'COMPLETED' ? (clotho === 'dropped' ? 'dropped' : 'scored') : 'failed';
        const id = `${environment}/item-${itemIndex}`;
        const note = status === 'failed' && closed !== 'FAILED' ? `workflow ${closed.toLowerCase().replace('_', ' ')}` : null;
        found.set(id, { environment, itemIndex, status, meanScore: attributes.get(MEAN_SCORE) ?? null, note });
        if (closed === 'FAILED' && failed.length < FAILURES_EXPLAINED) failed.push([id, info.workflowId]);
      }
      await Promise.all(
        failed.map(async ([id, workflowId]) => {
          const cause = await client.workflow.getHandle(workflowId).result().then(
            () => null,
            (error: unknown) => causeOf(error),
          );
          found.get(id)!.note = cause;
        }),
      );
      return found;
    },
    close: () => connection.close(),
  };
}
