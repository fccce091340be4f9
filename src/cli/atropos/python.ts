import { createHash } from 'node:crypto';
import { cp, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { ensureVenv } from '../../env/python-venv.js';
import { clothoHome, repoRoot } from '../../store/paths.js';

/** The Python package that serves an Atropos environment as Temporal activities. */
export const ATROPOS_PACKAGE = join(repoRoot, 'clients', 'python-atropos');

/** The package's sources, put first on the worker's PYTHONPATH: the venv's copy may be older than the checkout. */
export const ATROPOS_SOURCES = join(ATROPOS_PACKAGE, 'src');

/**
 * The Python that runs the Atropos worker: `CLOTHO_ATROPOS_PYTHON` when set (the user's own, with the package's
 * dependencies), else `<clotho home>/atropos-venv`, installed on first use from the package's pinned dependencies
 * (about a minute and 1 GB) and again whenever its pyproject.toml changes (the venv is stamped with its hash).
 */
export async function ensureAtroposPython(notice: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.CLOTHO_ATROPOS_PYTHON) return env.CLOTHO_ATROPOS_PYTHON;
  return ensureVenv({
    venv: join(clothoHome(env), 'atropos-venv'),
    stamp: createHash('sha256')
      .update(await readFile(join(ATROPOS_PACKAGE, 'pyproject.toml')))
      .digest('hex'),
    what: 'atroposlib and the Atropos worker',
    // Built from a copy: setuptools leaves build/ and *.egg-info beside the sources it builds.
    async pipArgs(building) {
      const copy = join(building, 'clotho-atropos-src');
      await cp(ATROPOS_PACKAGE, copy, { recursive: true, filter: (path) => !/(\/build|\.egg-info|__pycache__|\/tests)$/.test(path) });
      return [copy];
    },
    notice,
    hint: 'or set CLOTHO_ATROPOS_PYTHON to a Python that has it',
    env,
  });
}

/**
 * The environment the Python worker runs in: the package's sources first on PYTHONPATH, output unbuffered, and
 * transformers' advisory notices off (its "None of PyTorch, TensorFlow >= 2.0, or Flax have been found" on every
 * import of atroposlib is noise before whatever the worker has to say; an environment that sets the variable keeps it).
 */
export function atroposWorkerEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return {
    TRANSFORMERS_NO_ADVISORY_WARNINGS: '1',
    ...env,
    PYTHONPATH: [ATROPOS_SOURCES, env.PYTHONPATH].filter(Boolean).join(delimiter),
    PYTHONUNBUFFERED: '1',
  };
}
