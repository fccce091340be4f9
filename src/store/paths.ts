import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The nearest folder at or above `dir` with a package.json. */
function packageRootOf(dir: string): string {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'package.json'))) return at;
    if (dirname(at) === at) throw new Error(`no package.json above ${dir}`);
  }
}

/** The repository root, or the installed package's folder: src/store/ here, dist/src/store/ compiled. */
export const repoRoot = packageRootOf(dirname(fileURLToPath(import.meta.url)));

/** Clotho's project-local state: the Temporal CLI, its database, caches, generated models, the store. */
export function clothoHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.CLOTHO_HOME ? resolve(env.CLOTHO_HOME) : join(repoRoot, '.clotho');
}
