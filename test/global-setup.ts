import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { ensureTemporalCli, startDevServer } from '../temporal-dev/index.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `host:port` of the Temporal frontend every test file shares. */
    temporalAddress: string;
    temporalNamespace: string;
  }
}

/**
 * Starts one in-memory Temporal dev server for the whole run (or uses `TEMPORAL_ADDRESS`) and
 * provides its address to tests; `test/support/temporal.ts` turns it into a client.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.TEMPORAL_ADDRESS;
  if (external) {
    project.provide('temporalAddress', external);
    project.provide('temporalNamespace', process.env.TEMPORAL_NAMESPACE || 'default');
    return async () => undefined;
  }
  const cliPath = await ensureTemporalCli();
  const stateDir = await mkdtemp(join(tmpdir(), 'clotho-test-temporal-'));
  const server = await startDevServer({ cliPath, stateDir, port: 0, dbFilename: null, startTimeoutMs: 120_000 });
  project.provide('temporalAddress', server.address);
  project.provide('temporalNamespace', server.namespace);
  return async () => {
    await server.stop();
    await rm(stateDir, { recursive: true, force: true });
  };
}
