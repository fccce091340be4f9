import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The cluster suite (`npm run test:cluster`): Clotho on a Temporal server built from source, on PostgreSQL, as a
 * self-hosted cluster runs it. Not part of `npm test`: its files are named `*.cluster.ts`, which the default
 * config's `*.test.ts` patterns do not match, and the first run builds the server (minutes).
 */
export default defineConfig({
  // Paths below are from the repository root, wherever the command runs.
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/cluster/**/*.cluster.ts'],
    globalSetup: ['test/cluster/global-setup.ts'],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    // Each file runs a cluster of its own, and a cluster is PostgreSQL plus four Temporal services: one at a time.
    fileParallelism: false,
  },
});
