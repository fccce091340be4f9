import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// 'clotho' resolves to src/index.ts in the tests, as it does for tsc and the CLI in a checkout: the "clotho-source"
// condition of package.json's exports (the published package resolves it to dist/). Without "module": dependencies
// that Node loads itself must resolve as Node resolves them (the AWS SDK's "module" build is for bundlers: its
// imports have no file extensions).
const conditions = ['clotho-source', ...defaultServerConditions.filter((condition) => condition !== 'module')];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: [
      'src/**/*.test.ts',
      'environments/**/*.test.ts',
      'test/**/*.test.ts',
      'temporal-dev/**/*.test.ts',
      'docs/snippets/**/*.test.ts',
    ],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // Two cores: the Temporal server, workers and scripted servers share them with the tests.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
