import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clothoHome } from '../store/paths.js';

const here = dirname(fileURLToPath(import.meta.url));
// `.ts` run from the sources, `.js` compiled (dist/): the bundle is built from whichever this module is.
const extension = extname(fileURLToPath(import.meta.url));
const workflowsPath = join(here, `../workflows/index${extension}`);

/**
 * The workflow bundle, built once per version of the workflow sources and cached on disk: bundling takes
 * seconds on a small machine, and every worker process would otherwise pay it at start.
 */
export async function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  const hash = await sourcesHash();
  const path = join(clothoHome(), 'cache', `workflows-${hash}.json`);
  try {
    return JSON.parse(await readFile(path, 'utf8')) as WorkflowBundleWithSourceMap;
  } catch {
    const bundle = await bundleWorkflowCode({ workflowsPath, logger: quietLogger });
    await mkdir(dirname(path), { recursive: true });
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(bundle));
    await rename(temporary, path);
    return bundle;
  }
}

/** Hash of everything the bundle is built from: workflow and schema sources and the SDK version. */
async function sourcesHash(): Promise<string> {
  const hash = createHash('sha256');
  const sdk = createRequire(import.meta.url)('@temporalio/workflow/package.json') as { version: string };
  hash.update(sdk.version);
  for (const dir of ['../workflows', '../schema']) {
    const folder = join(here, dir);
    for (const name of (await readdir(folder)).filter((n) => n.endsWith(extension) && !n.endsWith(`.test${extension}`)).sort()) {
      hash.update(name).update(await readFile(join(folder, name)));
    }
  }
  return hash.digest('hex').slice(0, 16);
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};
