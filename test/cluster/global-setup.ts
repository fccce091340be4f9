import { ensureClusterBinaries } from '../../temporal-dev/index.js';

/**
 * Builds the Temporal server and its SQL tool once, before any file starts a cluster (the first build takes minutes
 * on two cores; later runs find them in <CLOTHO_HOME>/cluster/bin).
 */
export default async function setup(): Promise<void> {
  await ensureClusterBinaries({ log: (line) => console.log(`cluster suite: ${line}`) });
}
