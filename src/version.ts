import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './store/paths.js';

/**
 * The Clotho version of this code, from package.json: recorded on every workflow Clotho starts (memo and search
 * attribute). Found by walking up, as the sources (`src/`) and the compiled package (`dist/src/`) sit at different depths.
 */
export const CLOTHO_VERSION: string = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * The oldest Clotho version whose runs this code can replay (ARCHITECTURE.md, "Replay and patches"). A release that
 * deletes a `patched()` branch raises it to itself; a run started by an older version is refused, never replayed.
 */
export const REPLAY_BASELINE = '0.2.0';

/** The newest Clotho that did not record versions on its runs: it finishes runs that carry none. */
export const LAST_UNVERSIONED = '0.1.0';

/** Compares two `major.minor.patch` versions (a pre-release tag counts as its release). */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string) =>
    v
      .split(/[-+]/)[0]!
      .split('.')
      .map((p) => Number.parseInt(p, 10) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** Whether this code can finish a run started by `version` (undefined: a run started before versions were recorded). */
export function canFinish(version: string | undefined): boolean {
  return version !== undefined && compareVersions(version, REPLAY_BASELINE) >= 0;
}

/** The Clotho version that can finish a run this code refuses: the one that started it, or the last one before versions. */
export function finisherOf(version: string | undefined): string {
  return version ?? LAST_UNVERSIONED;
}
