// The CLI's `main`, for bin/clotho.js and bin/run-api.js. In a checkout (src/ is there) it runs the TypeScript sources
// through tsx, so a fresh clone needs no build step, and 'clotho' resolves to src/index.ts (the "clotho-source"
// condition of package.json's exports). The published package has no src/ and runs the compiled dist/. Both register
// tsx: it is what loads a user's .ts environment.
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { register as registerTsx } from 'tsx/esm/api';

/** @returns {Promise<(argv: string[]) => Promise<number>>} */
export async function loadMain() {
  registerTsx();
  if (!existsSync(new URL('../src/cli/main.ts', import.meta.url))) return (await import('../dist/src/cli/main.js')).main;
  const hook = 'export const resolve = (s, c, next) => next(s, { ...c, conditions: [...c.conditions, "clotho-source"] });';
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
  return (await import('../src/cli/main.ts')).main;
}
