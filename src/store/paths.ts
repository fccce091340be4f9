import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (src/store/ is two levels down). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Clotho's project-local state: the Temporal CLI, its database, caches, generated models, the store. */
export function clothoHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.CLOTHO_HOME ? resolve(env.CLOTHO_HOME) : join(repoRoot, '.clotho');
}
