import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'environments/**/*.test.ts', 'test/**/*.test.ts', 'temporal-dev/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // Two cores: the Temporal server, workers and scripted servers share them with the tests.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
