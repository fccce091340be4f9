import { readFileSync } from 'node:fs';
import { Connection, isGrpcServiceError, type ConnectionOptions } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import type { ClusterAuthorization, ClusterTlsFiles } from './cluster-config.js';
import { ensureSearchAttributes } from './search-attributes.js';

/** gRPC status codes the namespace registration tells apart. */
const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;

/** What a client needs to know of a cluster: its frontend and, when it has TLS or authorization, the files and token. */
export interface ClusterEndpoint {
  address: string;
  namespace: string;
  tls?: ClusterTlsFiles;
  authorization?: Pick<ClusterAuthorization, 'adminToken'>;
}

/**
 * Connection options of a client of the cluster: its CA, its client certificate under mutual TLS, and the admin token
 * as API key under authorization (without TLS said explicitly: an API key otherwise turns TLS on).
 */
export function clusterConnectionOptions(cluster: ClusterEndpoint): ConnectionOptions {
  const { tls } = cluster;
  const key = cluster.authorization ? { apiKey: cluster.authorization.adminToken } : {};
  if (!tls) return { address: cluster.address, ...key, ...(cluster.authorization ? { tls: false } : {}) };
  return {
    address: cluster.address,
    ...key,
    tls: {
      serverNameOverride: tls.serverName,
      serverRootCACertificate: readFileSync(tls.caFile),
      ...(tls.clientCertFile && tls.clientKeyFile
        ? { clientCertPair: { crt: readFileSync(tls.clientCertFile), key: readFileSync(tls.clientKeyFile) } }
        : {}),
    },
  };
}

/**
 * The environment a Temporal client (Clotho, the `temporal` CLI, any SDK's envconfig) needs to reach the cluster:
 * `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, with TLS the `TEMPORAL_TLS_*` files, and under authorization the admin
 * token as `TEMPORAL_API_KEY` (with `TEMPORAL_TLS=false` when the cluster has no TLS).
 */
export function clusterClientEnv(cluster: ClusterEndpoint): Record<string, string> {
  const env: Record<string, string> = { TEMPORAL_ADDRESS: cluster.address, TEMPORAL_NAMESPACE: cluster.namespace };
  const { tls } = cluster;
  if (cluster.authorization) {
    env.TEMPORAL_API_KEY = cluster.authorization.adminToken;
    if (!tls) env.TEMPORAL_TLS = 'false';
  }
  if (tls) {
    env.TEMPORAL_TLS_SERVER_CA_CERT_PATH = tls.caFile;
    env.TEMPORAL_TLS_SERVER_NAME = tls.serverName;
    if (tls.clientCertFile && tls.clientKeyFile) {
      env.TEMPORAL_TLS_CLIENT_CERT_PATH = tls.clientCertFile;
      env.TEMPORAL_TLS_CLIENT_KEY_PATH = tls.clientKeyFile;
    }
  }
  return env;
}

/** Whether the frontend answers a gRPC call (not just an open port). */
export async function isClusterServing(options: ConnectionOptions, timeoutMs = 2_000): Promise<boolean> {
  // `lazy`, not `connect`: a failed `connect` keeps its channel open with no handle to close it.
  const connection = Connection.lazy({ ...options, connectTimeout: timeoutMs });
  try {
    await connection.ensureConnected();
    await connection.workflowService.getSystemInfo({});
    return true;
  } catch {
    return false;
  } finally {
    await connection.close();
  }
}

/**
 * Waits until the frontend serves, registers the namespace if it is missing (a full server, unlike the dev
 * server, starts with none), waits until the frontend knows it (its namespace cache refreshes every 10 s), and
 * adds Clotho's search attributes. `exited` reports a dead server process, which ends the wait early.
 */
export async function waitUntilClusterServes(
  cluster: ClusterEndpoint,
  options: { timeoutMs: number; retentionDays: number; exited?: () => string | undefined },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  const base = clusterConnectionOptions(cluster);
  let lastError: unknown;
  const check = () => {
    const why = options.exited?.();
    if (why !== undefined) throw new Error(`server process ${why}`);
    if (Date.now() > deadline)
      throw new Error(`not serving after ${options.timeoutMs} ms (${(lastError as Error | undefined)?.message ?? 'no answer'})`);
  };
  for (let registered = false; ;) {
    check();
    const connection = Connection.lazy({ ...base, connectTimeout: 2_000 });
    try {
      await connection.ensureConnected();
      try {
        await connection.workflowService.describeNamespace({ namespace: cluster.namespace });
      } catch (error) {
        if (!isGrpcServiceError(error) || error.code !== NOT_FOUND) throw error;
        if (!registered) await register(connection, cluster.namespace, options.retentionDays);
        registered = true;
        throw error;
      }
      await ensureSearchAttributes(connection, cluster.namespace, undefined, Math.max(1_000, deadline - Date.now()));
      return;
    } catch (error) {
      lastError = error;
      await new Promise((done) => setTimeout(done, 500));
    } finally {
      await connection.close();
    }
  }
}

async function register(connection: Connection, namespace: string, retentionDays: number): Promise<void> {
  try {
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs(`${retentionDays} days`) });
  } catch (error) {
    if (!isGrpcServiceError(error) || error.code !== ALREADY_EXISTS) throw error;
  }
}
