import { Connection } from '@temporalio/client';
import { configuredTemporal, type TemporalConnectionOptions } from './connection-config.js';
import { ensureSearchAttributes } from './search-attributes.js';
import { DEFAULT_TEMPORAL_PORT, isServerListening, startDevServer, type DevServerOptions } from './server.js';
import { status } from './detached.js';

/** A Temporal server to use, whether this process started it or not. */
export interface TemporalEndpoint {
  address: string;
  namespace: string;
  /**
   * What `Connection.connect` and `NativeConnection.connect` take to reach it: `{ address }` for a local dev server;
   * for a configured server also the TLS, API key and gRPC metadata of Temporal's environment configuration.
   */
  connection: TemporalConnectionOptions;
  /** Known when this process started the server or found it in the state dir's pid file. */
  uiUrl?: string;
  /** Whether this call started the server (and `stop()` will stop it). */
  started: boolean;
  /** Stops the server if this call started it; otherwise does nothing. */
  stop(): Promise<void>;
}

export interface EnsureDevServerOptions extends DevServerOptions {
  /** Read for Temporal's client configuration (`TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_TLS_*`, `TEMPORAL_API_KEY`, a profile). @default process.env */
  env?: NodeJS.ProcessEnv;
}

const nothingToStop = async () => undefined;

/**
 * Finds or starts a server: the one Temporal's client configuration names (`TEMPORAL_ADDRESS` or a profile's
 * address; used as is, with its namespace, TLS and API key: see `configuredTemporal`); else a server already
 * answering on `<ip>:<port>` (Clotho's search attributes are added to it if missing); else a new dev server, on free
 * ports when `port` is 0.
 */
export async function ensureDevServer(options: EnsureDevServerOptions = {}): Promise<TemporalEndpoint> {
  const configured = configuredTemporal(options.env ?? process.env);
  if (configured) {
    const { connection } = configured;
    return {
      address: connection.address,
      namespace: configured.namespace || options.namespace || 'default',
      connection,
      started: false,
      stop: nothingToStop,
    };
  }
  const namespace = options.namespace ?? 'default';
  const address = `${options.ip ?? '127.0.0.1'}:${options.port ?? DEFAULT_TEMPORAL_PORT}`;
  // Port 0 asks for a new server on free ports: there is nothing to find there.
  const found = async () => options.port !== 0 && (await isServerListening(address));
  if (await found()) return reuse(address, namespace, options.stateDir);
  try {
    const server = await startDevServer(options);
    return {
      address: server.address,
      namespace,
      connection: { address: server.address },
      ...(server.uiUrl ? { uiUrl: server.uiUrl } : {}),
      started: true,
      stop: () => server.stop(),
    };
  } catch (error) {
    // Another process may have started one on the same port between the check and the start.
    if (await found()) return reuse(address, namespace, options.stateDir);
    throw error;
  }
}

async function reuse(address: string, namespace: string, stateDir: string | undefined): Promise<TemporalEndpoint> {
  const connection = await Connection.connect({ address });
  try {
    await ensureSearchAttributes(connection, namespace);
  } finally {
    await connection.close();
  }
  const recorded = (await status({ stateDir })).server;
  const uiUrl = recorded?.address === address ? recorded.uiUrl : undefined;
  return { address, namespace, connection: { address }, ...(uiUrl ? { uiUrl } : {}), started: false, stop: nothingToStop };
}
