import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import base from '../../vitest.config.js';

/**
 * The docs site's browser test (`npm run test:docs`, after `npm run docs:build`): headless Chromium on the built site.
 * Not part of `npm test`: its file is named `*.browser.ts`, which the default config's `*.test.ts` patterns do not
 * match, and the site takes a minute or two to build.
 */
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: base.resolve,
  ssr: base.ssr,
  test: {
    include: ['test/docs-site/**/*.browser.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
});
