import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClotho } from '../support/cli.js';
import { readGroups } from '../support/groups.js';
import { temporalEnv } from '../support/runs.js';

// A user's own folders, outside the repository: Clotho installed by path (a symlink to this checkout), the
// environment pasted from the README, and an environment published as a package.
const repo = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
let root: string;

/** The README's `my-env.ts`, so that what users paste is what this test runs. */
async function readmeEnvironment(): Promise<string> {
  const block = /```ts\n(\/\/ my-env\.ts\n[\s\S]*?)```/.exec(await readFile(join(repo, 'README.md'), 'utf8'));
  if (!block) throw new Error('README.md has no ```ts block starting with "// my-env.ts"');
  return block[1]!;
}

const npm = (cwd: string, ...args: string[]) => run('npm', [...args, '--no-audit', '--no-fund', '--ignore-scripts', '--offline'], { cwd });

/** `clotho <args>` as its own process in `cwd`, as the user runs it from a folder of theirs. */
const clotho = (args: string[], cwd: string) => runClotho(args, temporalEnv(), { cwd });

const processArgs = (environment: string, out: string) => ['process', environment, '--env.total_steps', '2', '--env.group_size', '2',
  '--env.max_token_length', '8', '--env.ensure_scores_are_not_same', 'false', '--env.data_path_to_save_groups', out,
  '--store', join(root, 'store')];

async function expectTwoGroups(result: Awaited<ReturnType<typeof clotho>>, out: string): Promise<void> {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const groups = await readGroups(out);
  expect(groups).toHaveLength(2);
  for (const group of groups) expect(group.scores).toHaveLength(2);
}

beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'clotho-user-')));
  const source = await readmeEnvironment();
  // A user's project ("type": "module"), and a bare folder: its package.json (there so that npm installs here) goes again.
  for (const [dir, type] of [['module', 'module'], ['bare', undefined]] as const) {
    await mkdir(join(root, dir));
    await writeFile(join(root, dir, 'package.json'), JSON.stringify({ name: dir, private: true, type }));
    await npm(join(root, dir), 'install', repo);
    if (!type) await rm(join(root, dir, 'package.json'));
    await writeFile(join(root, dir, 'my-env.ts'), source);
  }
  // A published environment: packed and installed as a copy, so its `clotho` is the user's (a peer dependency).
  const pkg = join(root, 'my-clotho-env');
  await mkdir(pkg);
  await writeFile(join(pkg, 'package.json'), JSON.stringify({
    name: 'my-clotho-env', version: '1.0.0', type: 'module', main: './index.ts',
    exports: { '.': { types: './index.ts', import: './index.ts' } }, peerDependencies: { clotho: '*' },
  }));
  await writeFile(join(pkg, 'index.ts'), `${source.replace("name: 'my-env'", "name: 'my-clotho-env'")}\nexport { defineEnvironment } from 'clotho';\n`);
  await npm(pkg, 'pack', '--pack-destination', root);
  await npm(join(root, 'module'), 'install', join(root, 'my-clotho-env-1.0.0.tgz'));
}, 60_000);
afterAll(() => rm(root, { recursive: true, force: true }));

describe('an environment in a folder of its own', () => {
  it('runs ./my-env.ts from a "type": "module" project', async () => {
    const out = join(root, 'module.jsonl');
    await expectTwoGroups(await clotho(processArgs('./my-env.ts', out), join(root, 'module')), out);
  });

  it('runs it from a folder with no package.json, by absolute path from another directory', async () => {
    const out = join(root, 'bare.jsonl');
    await expectTwoGroups(await clotho(processArgs(join(root, 'bare/my-env.ts'), out), tmpdir()), out);
  });

  it('runs an environment published as an npm package, by its name', async () => {
    const out = join(root, 'package.jsonl');
    await expectTwoGroups(await clotho(processArgs('my-clotho-env', out), join(root, 'module')), out);
  });

  it("gives the user's modules the CLI's own instance of the SDK", async () => {
    // What bin/clotho.js does (tsx's hooks), then the registry; the package re-exports what it imported from 'clotho'.
    const script = `
      import { register } from ${JSON.stringify(pathToFileURL(join(repo, 'node_modules/tsx/dist/esm/api/index.mjs')).href)};
      register();
      const { loadEnvironment } = await import(${JSON.stringify(pathToFileURL(join(repo, 'src/cli/registry.ts')).href)});
      const sdk = await import(${JSON.stringify(pathToFileURL(join(repo, 'src/index.ts')).href)});
      const pasted = await loadEnvironment(${JSON.stringify(join(root, 'bare/my-env.ts'))});
      await loadEnvironment('my-clotho-env');
      const installed = await import(${JSON.stringify(pathToFileURL(join(root, 'module/node_modules/my-clotho-env/index.ts')).href)});
      console.log(JSON.stringify({ zod: pasted.config.wrong_score instanceof sdk.z.ZodType, sdk: installed.defineEnvironment === sdk.defineEnvironment }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: join(root, 'module') });
    expect(JSON.parse(stdout)).toEqual({ zod: true, sdk: true });
  });
});
