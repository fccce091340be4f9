import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { clothoHome, repoRoot } from '../../store/paths.js';

const run = promisify(execFile);

/** The Python package that serves an Atropos environment as Temporal activities. */
export const ATROPOS_PACKAGE = join(repoRoot, 'clients', 'python-atropos');

/** The package's sources, put first on the worker's PYTHONPATH: the venv's copy may be older than the checkout. */
export const ATROPOS_SOURCES = join(ATROPOS_PACKAGE, 'src');

const STAMP = 'clotho-atropos.stamp';

/**
 * The Python that runs the Atropos worker: `CLOTHO_ATROPOS_PYTHON` when set (the user's own, with the package's
 * dependencies), else `<clotho home>/atropos-venv`, installed on first use from the package's pinned dependencies
 * (about a minute and 1 GB) and again whenever its pyproject.toml changes (the venv is stamped with its hash).
 */
export async function ensureAtroposPython(notice: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.CLOTHO_ATROPOS_PYTHON) return env.CLOTHO_ATROPOS_PYTHON;
  const venv = join(clothoHome(env), 'atropos-venv');
  const python = join(venv, 'bin', 'python');
  const stamp = createHash('sha256')
    .update(await readFile(join(ATROPOS_PACKAGE, 'pyproject.toml')))
    .digest('hex');
  if ((await readFile(join(venv, STAMP), 'utf8').catch(() => '')) === stamp) return python;
  notice(`installing atroposlib and the Atropos worker into ${venv} (once; about a minute)`);
  await mkdir(dirname(venv), { recursive: true });
  const temporary = `${venv}.installing-${process.pid}`;
  try {
    await run(env.PYTHON ?? 'python3', ['-m', 'venv', temporary], { env });
    // Built from a copy: setuptools leaves build/ and *.egg-info beside the sources it builds.
    const copy = join(temporary, 'clotho-atropos-src');
    await cp(ATROPOS_PACKAGE, copy, { recursive: true, filter: (path) => !/(\/build|\.egg-info|__pycache__|\/tests)$/.test(path) });
    await run(join(temporary, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', copy], {
      env,
      maxBuffer: 16 << 20,
    });
    await rm(copy, { recursive: true, force: true });
    await pointScriptsAt(join(temporary, 'bin'), temporary, venv);
    await writeFile(join(temporary, STAMP), stamp);
    // Another command may have installed it meanwhile: the newer install replaces it whole.
    await rm(venv, { recursive: true, force: true });
    await rename(temporary, venv);
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.trim().split('\n').slice(-5).join('\n') ?? String(error);
    throw new Error(
      `could not install ${ATROPOS_PACKAGE} into ${venv}:\n${detail}\n(or set CLOTHO_ATROPOS_PYTHON to a Python that has it)`,
    );
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
  return python;
}

/**
 * pip writes the venv's absolute path into its console scripts (`run-api`'s `#!` line) and `activate`: built under a
 * temporary name and renamed, they would name a Python that no longer exists, so they are pointed at the final path.
 */
export async function pointScriptsAt(bin: string, built: string, final: string): Promise<void> {
  for (const entry of await readdir(bin, { withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(bin, entry.name);
    const text = await readFile(path);
    // Text scripts only: the interpreter itself is a binary (or a link) that never names the venv.
    if (text.includes(0) || !text.includes(built)) continue;
    await writeFile(path, text.toString('utf8').replaceAll(built, final));
  }
}
