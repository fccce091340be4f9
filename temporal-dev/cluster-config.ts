import { stringify } from 'yaml';

/** Ports of one single-node cluster: the frontend's, and the internal ones each service binds on loopback. */
export interface ClusterPorts {
  frontend: number;
  frontendHttp: number;
  frontendMembership: number;
  history: number;
  historyMembership: number;
  matching: number;
  matchingMembership: number;
  worker: number;
  workerMembership: number;
  /** The internal frontend, which the cluster's own system worker calls without a token (under authorization only). */
  internalFrontend?: number;
  internalFrontendHttp?: number;
  internalFrontendMembership?: number;
}

/** TLS of the frontend as the server reads it: PEM files. With `clientCaFile`, clients must present a certificate. */
export interface ClusterTlsFiles {
  certFile: string;
  keyFile: string;
  /** CA of the server certificate: the cluster's own system worker verifies the frontend against it. */
  caFile: string;
  /** Host name the server certificate is valid for. */
  serverName: string;
  /** Mutual TLS: client certificates must be signed by this CA. */
  clientCaFile?: string;
  /** The client certificate and key the cluster's system worker presents (required with mutual TLS). */
  clientCertFile?: string;
  clientKeyFile?: string;
}

/**
 * JWT authorization of the frontend, as Temporal's default claim mapper and authorizer do it: a caller sends
 * `authorization: Bearer <JWT>` (an SDK's API key), signed by a key of the JWKS at `jwksUrl`, whose `permissions`
 * claim lists `<namespace>:<read|write|worker|admin>` (the namespace `temporal-system`: every namespace).
 */
export interface ClusterAuthorization {
  /** Where the server reads the public keys tokens are signed with (a JWKS, RFC 7517), at start and every minute. */
  jwksUrl: string;
  /** A token with `temporal-system:admin`: the cluster's own calls (namespace, search attributes) send it. */
  adminToken: string;
}

/** Everything the server's configuration file is made of. */
export interface ClusterConfigInput {
  ip: string;
  ports: ClusterPorts;
  postgres: { ip: string; port: number; user: string; password: string };
  /** Databases of the default (history, executions) and visibility stores. */
  databases: { default: string; visibility: string };
  /** The dynamic config file (`clusterDynamicConfig`). */
  dynamicConfigFile: string;
  /** Shards are fixed for the life of a cluster's database: changing them later needs a new database. @default 4 */
  numHistoryShards?: number;
  tls?: ClusterTlsFiles;
  authorization?: Pick<ClusterAuthorization, 'jwksUrl'>;
  /** @default 'warn' */
  logLevel?: string;
}

function sqlStore(input: ClusterConfigInput, databaseName: string, maxConns: number) {
  return {
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${input.postgres.ip}:${input.postgres.port}`,
      connectProtocol: 'tcp',
      user: input.postgres.user,
      password: input.postgres.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  };
}

function service(ip: string, grpcPort: number, membershipPort: number, extra: Record<string, unknown> = {}) {
  return { rpc: { grpcPort, membershipPort, bindOnIP: ip, ...extra } };
}

function tlsSection(tls: ClusterTlsFiles) {
  const mutual = tls.clientCaFile !== undefined;
  if (mutual && (tls.clientCertFile === undefined || tls.clientKeyFile === undefined)) {
    throw new Error('mutual TLS needs a client certificate and key for the cluster’s own system worker');
  }
  const client = { serverName: tls.serverName, rootCaFiles: [tls.caFile] };
  return {
    frontend: {
      server: {
        certFile: tls.certFile,
        keyFile: tls.keyFile,
        ...(mutual ? { requireClientAuth: true, clientCaFiles: [tls.clientCaFile] } : {}),
      },
      client,
    },
    // The system worker (schedules, batch operations, namespace deletion) is a client of the frontend like any other.
    systemWorker: {
      ...(tls.clientCertFile ? { certFile: tls.clientCertFile, keyFile: tls.clientKeyFile } : {}),
      client,
    },
  };
}

function internalFrontend(ip: string, ports: ClusterPorts) {
  const { internalFrontend: grpc, internalFrontendHttp: http, internalFrontendMembership: membership } = ports;
  if (grpc === undefined || http === undefined || membership === undefined)
    throw new Error('authorization needs the internal frontend’s ports');
  return service(ip, grpc, membership, { httpPort: http });
}

/**
 * The Temporal server's configuration (`temporal-server --config-file`) for one node on PostgreSQL: the postgres12
 * SQL plugin for both stores, every service bound to `ip`, no metrics or pprof listeners, no archival.
 */
export function clusterConfig(input: ClusterConfigInput): string {
  const { ip, ports } = input;
  const config = {
    log: { stdout: true, level: input.logLevel ?? 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: input.numHistoryShards ?? 4,
      datastores: {
        'postgres-default': sqlStore(input, input.databases.default, 20),
        'postgres-visibility': sqlStore(input, input.databases.visibility, 10),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: ip },
      ...(input.tls ? { tls: tlsSection(input.tls) } : {}),
      ...(input.authorization
        ? {
            authorization: {
              jwtKeyProvider: { keySourceURIs: [input.authorization.jwksUrl], refreshInterval: '1m' },
              permissionsClaimName: 'permissions',
              authorizer: 'default',
              claimMapper: 'default',
            },
          }
        : {}),
    },
    services: {
      frontend: service(ip, ports.frontend, ports.frontendMembership, { httpPort: ports.frontendHttp }),
      history: service(ip, ports.history, ports.historyMembership),
      matching: service(ip, ports.matching, ports.matchingMembership),
      worker: service(ip, ports.worker, ports.workerMembership),
      // Under authorization the system worker (scanners, schedules) has no token: it calls the internal frontend,
      // which serves only the cluster's own services and checks no claims.
      ...(input.authorization ? { 'internal-frontend': internalFrontend(ip, ports) } : {}),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `${ip}:${ports.frontend}` },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: input.dynamicConfigFile, pollInterval: '10s' },
  };
  return stringify(config);
}

/**
 * Dynamic config of the cluster. No calls home (the version check reaches the internet); search attributes read
 * through to the database, so that attributes added by `ensureSearchAttributes` are usable at once rather than
 * after the frontend's cache refresh (a single node has no load to save by caching them).
 */
export function clusterDynamicConfig(): string {
  return stringify({
    'frontend.enableServerVersionCheck': [{ value: false }],
    'system.forceSearchAttributesCacheRefreshOnRead': [{ value: true }],
  });
}
