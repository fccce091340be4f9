import { Client, Connection } from '@temporalio/client';
import { configuredTemporal, isServerListening, type TemporalConnectionOptions } from '../../../temporal-dev/index.js';
import { causeOf } from '../../workflows/messages.js';
import { ENVIRONMENT, ITEM_INDEX, MEAN_SCORE, STATUS } from '../../workflows/search-attributes.js';
import type { GroupStatus } from './model.js';
import { dropReasonText } from '../timeline-format.js';

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

/** Failed and dropped groups whose cause or reason is fetched (one history read each); the rest show only their status. */
const ENDS_EXPLAINED = 200;

/** Where the viewer looks for a run's workflows, and how it connects there. */
export interface ViewTemporal {
  connection: TemporalConnectionOptions;
  namespace: string;
  /** Whether Temporal's client configuration named the server (else the local dev server's default address). */
  configured: boolean;
}

/**
 * The server Temporal's client configuration names (`TEMPORAL_ADDRESS` or a profile, with its namespace, TLS, API key
 * and gRPC metadata: `configuredTemporal`), as every other command connects; else the local dev server's address.
 */
export function viewTemporal(env: NodeJS.ProcessEnv = process.env): ViewTemporal {
  const configured = configuredTemporal(env);
  if (!configured) return { connection: { address: '127.0.0.1:7233' }, namespace: 'default', configured: false };
  return { connection: configured.connection, namespace: configured.namespace || 'default', configured: true };
}

/** A visibility filter for rollout groups: Clotho's environments' (`rolloutGroup`) and Atropos's (`atroposRolloutGroup`). */
export const ROLLOUT_GROUP_TYPES = `WorkflowType IN ("rolloutGroup", "atroposRolloutGroup")`;

/**
 * Connects to the server of {@link viewTemporal}; undefined when a local dev server does not answer. Never starts a
 * server: the viewer only reads what a run left. A configured server that refuses the connection is an error (its
 * TLS or API key is wrong, say), not a quiet absence.
 */
export async function connectRunWorkflows(env: NodeJS.ProcessEnv = process.env): Promise<RunWorkflows | undefined> {
  const target = viewTemporal(env);
  const { namespace } = target;
  if (!target.configured && !(await isServerListening(target.connection.address))) return undefined;
  const connection = await Connection.connect({ ...target.connection, connectTimeout: 5_000 }).catch((error: unknown) => {
    throw new Error(`Temporal at ${target.connection.address} (from TEMPORAL_ADDRESS or the profile): ${(error as Error).message}`);
  });
  const client = new Client({ connection, namespace });
  return {
    async list(runId) {
      const found = new Map<string, WorkflowFacts>();
      const explained: [string, string][] = [];
      const query = `ClothoRunId = "${runId.replace(/["\\]/g, '')}" AND ${ROLLOUT_GROUP_TYPES}`;
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
        if ((closed === 'FAILED' || status === 'dropped') && explained.length < ENDS_EXPLAINED) explained.push([id, info.workflowId]);
      }
      // A failure's cause, and why a dropped group delivered nothing (its result's reason: Clotho's or Atropos's).
      await Promise.all(
        explained.map(async ([id, workflowId]) => {
          found.get(id)!.note = await client.workflow
            .getHandle(workflowId)
            .result()
            .then(
              (result: { dropReason?: string; reason?: string } | undefined) => {
                const reason = result?.dropReason ?? result?.reason;
                return reason ? dropReasonText(reason) : null;
              },
              (error: unknown) => causeOf(error),
            );
        }),
      );
      return found;
    },
    close: () => connection.close(),
  };
}
