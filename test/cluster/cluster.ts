import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  startCluster,
  stopCluster,
  type ClusterAuthorization,
  type ClusterTlsFiles,
  type RunningCluster,
} from '../../temporal-dev/index.js';
import { spawnSupervised, type Supervised } from '../support/chaos/supervisor.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const clothoBin = join(repoRoot, 'bin/clotho.js');

/** A cluster of a test's own: PostgreSQL and the Temporal server in a temporary state dir, on free ports. */
export interface TestCluster {
  cluster: RunningCluster;
  /** The temporary directory: the cluster's state, and room for the test's own files. */
  dir: string;
  /** Stops the server and PostgreSQL; removes the directory unless `keep` (a failed test's files are evidence). */
  stop(keep?: boolean): Promise<void>;
}

export async function startTestCluster(
  options: { tls?: (dir: string) => Promise<ClusterTlsFiles>; authorization?: ClusterAuthorization } = {},
): Promise<TestCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'clotho-cluster-'));
  // PostgreSQL runs as the postgres user when the suite runs as root: it must be able to enter the directory.
  await chmod(dir, 0o755);
  const stateDir = join(dir, 'cluster');
  const started = Date.now();
  try {
    const tls = options.tls ? await options.tls(dir) : undefined;
    const cluster = await startCluster({
      stateDir,
      port: 0,
      ...(tls ? { tls } : {}),
      ...(options.authorization ? { authorization: options.authorization } : {}),
      log: (line) => console.log(`cluster: ${line}`),
    });
    console.log(`cluster: up in ${((Date.now() - started) / 1000).toFixed(1)} s at ${cluster.address} (files in ${dir})`);
    return {
      cluster,
      dir,
      async stop(keep = false) {
        await stopCluster({ stateDir });
        if (!keep) await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stopCluster({ stateDir }).catch(() => undefined);
    throw error;
  }
}

/**
 * `clotho <args>` as one host runs it: its own CLOTHO_HOME (state, caches), the cluster's client environment, its
 * output in `<dir>/<name>.log`; in a process group of its own, so that `kill()` is a kill -9 of the host's process.
 */
export function clothoOnHost(dir: string, name: string, clientEnv: Record<string, string>, args: string[]): Supervised {
  return spawnSupervised({
    name,
    command: process.execPath,
    args: [clothoBin, ...args],
    env: { ...clientEnv, CLOTHO_HOME: join(dir, `host-${name}`) },
    logFile: join(dir, `${name}.log`),
    cwd: repoRoot,
  });
}
