import { createHash } from 'node:crypto';
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureVenv } from '../../env/python-venv.js';
import { clothoHome, repoRoot } from '../../store/paths.js';

/** The Python package that serves a verifiers environment as Temporal activities. */
export const VERIFIERS_PACKAGE = join(repoRoot, 'clients', 'python-verifiers');

/** The package's sources, put first on the worker's PYTHONPATH: the venv's copy may be older than the checkout. */
export const VERIFIERS_SOURCES = join(VERIFIERS_PACKAGE, 'src');

/**
 * The Python that runs the verifiers worker: `CLOTHO_VERIFIERS_PYTHON` when set (the user's own, where `prime env
 * install` or `pip install` put their environments, with this package's dependencies), else
 * `<clotho home>/verifiers-venv`, installed on first use from the package's pinned dependencies (`verifiers==0.4.0`,
 * temporalio, and uv, which verifiers runs to prepare every agent program: about 4 minutes and 600 MB) and again
 * whenever its pyproject.toml changes (the venv is stamped with its hash). Made from `$PYTHON`, else `python3` (3.11 or
 * later; Harbor's and NeMo Gym's tasksets need 3.12).
 */
export async function ensureVerifiersPython(notice: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.CLOTHO_VERIFIERS_PYTHON) return env.CLOTHO_VERIFIERS_PYTHON;
  return ensureVenv({
    venv: join(clothoHome(env), 'verifiers-venv'),
    stamp: await verifiersStamp(),
    what: 'verifiers and the verifiers worker',
    // Built from a copy: setuptools leaves build/ and *.egg-info beside the sources it builds.
    async pipArgs(building) {
      const copy = join(building, 'clotho-verifiers-src');
      await cp(VERIFIERS_PACKAGE, copy, { recursive: true, filter: (path) => !/(\/build|\.egg-info|__pycache__|\/tests)$/.test(path) });
      return [copy];
    },
    notice,
    hint: 'or set CLOTHO_VERIFIERS_PYTHON to a Python that has it',
    env,
  });
}

/** What the venv is stamped with: its pyproject's hash. Environments' layers are keyed on it too. */
export async function verifiersStamp(): Promise<string> {
  return createHash('sha256')
    .update(await readFile(join(VERIFIERS_PACKAGE, 'pyproject.toml')))
    .digest('hex');
}
