import type { TLSConfig } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';

/**
 * How to reach a Temporal frontend: what `Connection.connect` (client) and `NativeConnection.connect` (worker)
 * both take. Holds TLS material and API keys, so it is passed as a whole, never rebuilt from `address` alone.
 */
export interface TemporalConnectionOptions {
  address: string;
  /** `true`: TLS with the system's roots (Temporal Cloud with an API key); an object: CA, server name, client pair. */
  tls?: TLSConfig | boolean;
  apiKey?: string;
  /** gRPC metadata sent with every call (`TEMPORAL_GRPC_META_*`). */
  metadata?: Record<string, string>;
}

/** A configured Temporal server: where, which namespace, and how to connect. */
export interface ConfiguredTemporal {
  connection: TemporalConnectionOptions;
  /** Absent when neither the environment nor the profile names one. */
  namespace?: string;
}

/**
 * Temporal's own client configuration, as every Temporal SDK and the `temporal` CLI read it (`@temporalio/envconfig`):
 * the profile file (`TEMPORAL_CONFIG_FILE`, else `~/.config/temporalio/temporal.toml`; profile `TEMPORAL_PROFILE`,
 * else `default`) overridden by `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS`,
 * `TEMPORAL_TLS_CLIENT_CERT_PATH|DATA`, `TEMPORAL_TLS_CLIENT_KEY_PATH|DATA`, `TEMPORAL_TLS_SERVER_CA_CERT_PATH|DATA`,
 * `TEMPORAL_TLS_SERVER_NAME` and `TEMPORAL_GRPC_META_*`. An API key turns TLS on. Returns undefined when nothing
 * names an address: the caller then uses (or starts) the local dev server.
 */
export function configuredTemporal(env: NodeJS.ProcessEnv = process.env): ConfiguredTemporal | undefined {
  const defined = Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const { connectionOptions: options, namespace } = loadClientConnectConfig({ overrideEnvVars: defined });
  if (!options.address) return undefined;
  const connection: TemporalConnectionOptions = { address: options.address };
  if (options.tls !== undefined && options.tls !== null) connection.tls = options.tls;
  if (options.apiKey !== undefined) connection.apiKey = options.apiKey;
  if (options.metadata !== undefined && Object.keys(options.metadata).length > 0)
    connection.metadata = options.metadata as Record<string, string>;
  return { connection, ...(namespace ? { namespace } : {}) };
}
