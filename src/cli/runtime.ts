import { Client, Connection } from '@temporalio/client';
import { CLOTHO_SEARCH_ATTRIBUTES, ensureDevServer, listCustomSearchAttributes, type TemporalEndpoint } from '../../temporal-dev/index.js';

/** A Temporal connection for one command: the configured cluster, a running dev server, or one started now. */
export interface TemporalRuntime {
  endpoint: TemporalEndpoint;
  connection: Connection;
  client: Client;
  /** Whether the namespace has Clotho's search attributes (a foreign cluster may lack them). */
  searchAttributes: boolean;
  close(): Promise<void>;
}

/** Connects to `TEMPORAL_ADDRESS`, or reuses or starts the local dev server (and stops it on close if started). */
export async function openTemporal(): Promise<TemporalRuntime> {
  const endpoint = await ensureDevServer();
  try {
    const connection = await Connection.connect(endpoint.connection);
    const present = await listCustomSearchAttributes(connection, endpoint.namespace).catch(() => new Map<string, number>());
    const searchAttributes = Object.keys(CLOTHO_SEARCH_ATTRIBUTES).every((name) => present.has(name));
    const client = new Client({ connection, namespace: endpoint.namespace });
    return {
      endpoint,
      connection,
      client,
      searchAttributes,
      async close() {
        await connection.close();
        await endpoint.stop();
      },
    };
  } catch (error) {
    await endpoint.stop();
    throw error;
  }
}

/**
 * Task queues of one environment of a run: its workers serve only that environment and its inference servers, so
 * several environments can share a run id (one training run) and `clotho worker` scales each on hosts of its own.
 */
export function runTaskQueues(runId: string, environment: string) {
  const at = `${runId}/${environment}`;
  return { workflows: `clotho-workflows@${at}`, llm: `clotho-llm@${at}`, env: `clotho-env@${at}` };
}
