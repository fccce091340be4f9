// The CLI's `main`, for bin/clotho.js and bin/run-api.js. In a checkout (src/ is there) it runs the TypeScript sources
// through tsx, so a fresh clone needs no build step, and 'clotho' resolves to src/index.ts (the "clotho-source"
// condition of package.json's exports). The published package has no src/ and runs the compiled dist/. Both register
// tsx: it is what loads a user's .ts environment.
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { register as registerTsx } from 'tsx/esm/api';

const sources = existsSync(new URL('../src/cli/main.ts', import.meta.url));

/** Registers the module hooks the CLI runs under: tsx, and in a checkout the "clotho-source" condition. */
export function registerLoaders() {
  registerTsx();
  if (!sources) return;
  const hook = 'export const resolve = (s, c, next) => next(s, { ...c, conditions: [...c.conditions, "clotho-source"] });';
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
}

/** @returns {Promise<(argv: string[]) => Promise<number>>} */
export async function loadMain() {
  registerLoaders();
  return (await import(sources ? '../src/cli/main.ts' : '../dist/src/cli/main.js')).main;
}
