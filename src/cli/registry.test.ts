import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../config/config-error.js';
import { builtInEnvironments, loadEnvironment } from './registry.js';

// A definition in plain JavaScript, so that fixtures need no SDK to be installed beside them.
const definition = (name: string) => `export default { name: '${name}', description: '', config: {},
  load: async () => ({ size: 1, get: () => 1 }), prompt: () => [], parse: () => 1, score: () => 1 };\n`;

let dir: string;

async function writePackage(name: string, manifest: Record<string, unknown>, files: Record<string, string>): Promise<void> {
  const root = join(dir, 'node_modules', name);
  await mkdir(root, { recursive: true });
  await writeFile(join(root, 'package.json'), JSON.stringify({ name, type: 'module', ...manifest }));
  for (const [file, text] of Object.entries(files)) await writeFile(join(root, file), text);
}

beforeAll(async () => {
  dir = await realpath(await mkdtemp(join(tmpdir(), 'clotho-registry-')));
  await mkdir(join(dir, 'project/deep'), { recursive: true });
  await writeFile(join(dir, 'ok.mjs'), definition('by-path'));
  await writeFile(join(dir, 'not-a-definition.mjs'), 'export default { name: 7 };\n');
  await writeFile(join(dir, 'broken.ts'), "export default { name: 'broken', \n");
  await writePackage(
    'import-only',
    { exports: { '.': { types: './index.d.ts', import: './env.js', require: './missing.cjs' } } },
    {
      'env.js': definition('import-only'),
    },
  );
  await writePackage('@acme/by-main', { main: 'lib/main.js' }, {});
  await mkdir(join(dir, 'node_modules/@acme/by-main/lib'));
  await writeFile(join(dir, 'node_modules/@acme/by-main/lib/main.js'), definition('by-main'));
  await writePackage('require-only', { exports: { require: './env.cjs' } }, {});
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('loadEnvironment', () => {
  it('loads every built-in by name', async () => {
    expect(builtInEnvironments()).toEqual([
      'gsm8k',
      'tool_calling',
      'tool_use',
      'fundamental_prediction',
      'mcqa',
      'rlaif',
      'multimodal',
      'dataset',
      'code_execution',
      'games',
      'blackjack',
      'taxi',
      'text_adventure',
      'lowercase',
      'bugfix',
    ]);
    for (const name of builtInEnvironments()) expect((await loadEnvironment(name)).name).toBe(name);
  });

  it('loads a path relative to the working directory, or absolute', async () => {
    expect((await loadEnvironment('../ok.mjs', join(dir, 'project'))).name).toBe('by-path');
    expect((await loadEnvironment(join(dir, 'ok.mjs'), '/')).name).toBe('by-path');
  });

  it('finds an installed package from the working directory up, as import would', async () => {
    expect((await loadEnvironment('import-only', join(dir, 'project/deep'))).name).toBe('import-only');
    expect((await loadEnvironment('@acme/by-main', dir)).name).toBe('by-main');
  });

  it('answers an unknown name with a usage error listing the built-ins', async () => {
    const error = await loadEnvironment('no-such-env', join(dir, 'project')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      `unknown environment "no-such-env"; known: ${builtInEnvironments().join(', ')} (built in); no package of that name is` +
        ` installed in ${join(dir, 'project')}, and a file needs a path (./my-env.ts)`,
    ]);
  });

  it('says which file is missing', async () => {
    await expect(loadEnvironment('./nope.ts', dir)).rejects.toThrow(`environment module not found: ${join(dir, 'nope.ts')}`);
  });

  it('names the package whose exports have no entry for import', async () => {
    await expect(loadEnvironment('require-only', dir)).rejects.toThrow(
      /package require-only \(.*require-only\) exports no "\." entry for import/,
    );
  });

  it('lists what is wrong with an export that is not a definition', async () => {
    const error = (await loadEnvironment('./not-a-definition.mjs', dir).catch((e: unknown) => e)) as Error;
    expect(error.message).toContain(`${join(dir, 'not-a-definition.mjs')} does not export an environment definition as default`);
    expect(error.message).toContain('name: Invalid input: expected string, received number');
    expect(error.message).toContain('load: expected a function');
  });

  it('names the file that does not compile', async () => {
    await expect(loadEnvironment('./broken.ts', dir)).rejects.toThrow(`cannot load environment ${join(dir, 'broken.ts')}:`);
  });
});
