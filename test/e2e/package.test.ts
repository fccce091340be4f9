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
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';

// A user's own folders, outside the repository: Clotho installed by path (a symlink to this checkout), the
// environment of the guide "Write an environment" (docs/snippets/my-env.ts, which the guide and the README show), and
// an environment published as a package.
const repo = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
let root: string;

/** The guide's `my-env.ts`, so that what users copy is what this test runs. */
const guideEnvironment = () => readFile(join(repo, 'docs/snippets/my-env.ts'), 'utf8');

const npm = (cwd: string, ...args: string[]) => run('npm', [...args, '--no-audit', '--no-fund', '--ignore-scripts', '--offline'], { cwd });

/** `clotho <args>` as its own process in `cwd`, as the user runs it from a folder of theirs. */
const clotho = (args: string[], cwd: string) => runClotho(args, temporalEnv(), { cwd });

const processArgs = (environment: string, out: string) => [
  'process',
  environment,
  '--env.total_steps',
  '2',
  '--env.group_size',
  '2',
  '--env.max_token_length',
  '8',
  '--env.ensure_scores_are_not_same',
  'false',
  '--env.data_path_to_save_groups',
  out,
  '--store',
  join(root, 'store'),
];

async function expectTwoGroups(result: Awaited<ReturnType<typeof clotho>>, out: string): Promise<void> {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const groups = await readGroups(out);
  expect(groups).toHaveLength(2);
  for (const group of groups) expect(group.scores).toHaveLength(2);
}

beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'clotho-user-')));
  const source = await guideEnvironment();
  // A user's project ("type": "module"), and a bare folder: its package.json (there so that npm installs here) goes again.
  for (const [dir, type] of [
    ['module', 'module'],
    ['bare', undefined],
  ] as const) {
    await mkdir(join(root, dir));
    await writeFile(join(root, dir, 'package.json'), JSON.stringify({ name: dir, private: true, type }));
    await npm(join(root, dir), 'install', repo);
    if (!type) await rm(join(root, dir, 'package.json'));
    await writeFile(join(root, dir, 'my-env.ts'), source);
  }
  // A published environment: packed and installed as a copy, so its `clotho` is the user's (a peer dependency).
  const pkg = join(root, 'my-clotho-env');
  await mkdir(pkg);
  await writeFile(
    join(pkg, 'package.json'),
    JSON.stringify({
      name: 'my-clotho-env',
      version: '1.0.0',
      type: 'module',
      main: './index.ts',
      exports: { '.': { types: './index.ts', import: './index.ts' } },
      peerDependencies: { clotho: '*' },
    }),
  );
  await writeFile(
    join(pkg, 'index.ts'),
    `${source.replace("name: 'my-env'", "name: 'my-clotho-env'")}\nexport { defineEnvironment } from 'clotho';\n`,
  );
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
    // What bin/clotho.js does (tsx's hooks, the "clotho-source" condition), then the registry; the package re-exports
    // what it imported from 'clotho'.
    const script = `
      import { registerLoaders } from ${JSON.stringify(pathToFileURL(join(repo, 'bin/load-main.js')).href)};
      registerLoaders();
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

// What `npm pack` produces, installed from its tarball into an empty folder as a user installs it: compiled JavaScript,
// no TypeScript loader in the user's `node`. The installed CLI runs a plain .mjs environment and a .ts one.
describe('the package npm pack produces', () => {
  let installed: string;
  let model: ScriptedOpenAI;
  /** The heavy dependencies the runtime loads when used, never by importing the SDK. */
  const HEAVY = ['node-llama-cpp', '@aws-sdk/client-s3', '@wandb/sdk'];

  beforeAll(async () => {
    installed = join(root, 'installed');
    await mkdir(installed);
    await writeFile(join(installed, 'package.json'), JSON.stringify({ name: 'installed', private: true, type: 'module' }));
    let started = Date.now();
    // prepack runs `npm run build` (dist/); --ignore-scripts would skip it.
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', root, '--no-audit', '--no-fund'], {
      cwd: repo,
      maxBuffer: 1 << 26,
    });
    const [packed] = JSON.parse(stdout) as { filename: string; size: number; unpackedSize: number; entryCount: number }[];
    console.log(
      `npm pack (build included): ${Date.now() - started} ms; ${packed!.filename} ${(packed!.size / 1e6).toFixed(2)} MB,` +
        ` ${(packed!.unpackedSize / 1e6).toFixed(1)} MB unpacked, ${packed!.entryCount} files`,
    );
    // From npm's cache where it can (the repository's own `npm install` filled it). Optional dependencies are left out
    // (node-llama-cpp's prebuilt engines, most of the 1.2 GB a full install writes; this test runs no embedded model)
    // except esbuild's binary for this platform, which tsx needs to load the .ts environment.
    const esbuild = JSON.parse(await readFile(join(repo, 'node_modules/esbuild/package.json'), 'utf8')) as { version: string };
    started = Date.now();
    await run(
      'npm',
      [
        'install',
        join(root, packed!.filename),
        `@esbuild/${process.platform}-${process.arch}@${esbuild.version}`,
        '--omit=optional',
        '--prefer-offline',
        '--no-package-lock',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
      ],
      { cwd: installed },
    );
    console.log(`npm install of the tarball: ${Date.now() - started} ms`);
    model = await startScriptedOpenAI({
      responder: (body) => ({ choices: Array.from({ length: body.n ?? 1 }, () => ({ text: 'It is \\boxed{4}.' })) }),
    });
  }, 400_000);
  afterAll(() => model?.close());

  /** `clotho <args>` from the installed package's bin, run by plain `node` in the user's folder. */
  async function installedClotho(args: string[]) {
    const bin = join(installed, 'node_modules/clotho/bin/clotho.js');
    return run(process.execPath, [bin, ...args], { cwd: installed, env: { ...process.env, ...temporalEnv() } }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
  }
  const scriptedArgs = (environment: string, out: string) => [...processArgs(environment, out), '--openai.base_url', model.baseUrl];

  it('ships compiled JavaScript with declarations and no TypeScript sources of the SDK', async () => {
    const manifest = JSON.parse(await readFile(join(installed, 'node_modules/clotho/package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    expect(manifest.exports['.']).toMatchObject({ types: './dist/src/index.d.ts', default: './dist/src/index.js' });
    await expect(readFile(join(installed, 'node_modules/clotho/dist/src/index.d.ts'), 'utf8')).resolves.toContain('defineEnvironment');
    await expect(readFile(join(installed, 'node_modules/clotho/src/index.ts'))).rejects.toThrow(/ENOENT/);
  });

  it("import('clotho') in plain node loads the compiled SDK and none of the heavy runtime dependencies", async () => {
    // Every module Node resolves while importing, reported by a resolve hook on the loader thread.
    const hook = `let port; export function initialize(data) { port = data.port; }
      export async function resolve(s, c, next) { const r = await next(s, c); port.postMessage(r.url); return r; }`;
    const script = `
      import { register } from 'node:module';
      import { MessageChannel } from 'node:worker_threads';
      const { port1, port2 } = new MessageChannel();
      const urls = [];
      port1.on('message', (url) => urls.push(url));
      register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)}, { data: { port: port2 }, transferList: [port2] });
      const sdk = await import('clotho');
      await new Promise((r) => setTimeout(r, 200));
      port1.close();
      console.log(JSON.stringify({ entry: import.meta.resolve('clotho'), defineEnvironment: typeof sdk.defineEnvironment, urls }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: installed });
    const { entry, defineEnvironment, urls } = JSON.parse(stdout) as { entry: string; defineEnvironment: string; urls: string[] };
    expect(entry).toBe(pathToFileURL(join(installed, 'node_modules/clotho/dist/src/index.js')).href);
    expect(defineEnvironment).toBe('function');
    const packages = new Set(urls.map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1]).filter(Boolean));
    expect(packages).toContain('zod');
    for (const heavy of HEAVY) expect(packages).not.toContain(heavy);
    expect(packages).not.toContain('tsx');
  });

  it('runs a plain .mjs environment that imports clotho through the installed CLI', async () => {
    await writeFile(
      join(installed, 'env.mjs'),
      `
      import { defineEnvironment, fromItems, lastBoxed, z } from 'clotho';
      export default defineEnvironment({
        name: 'plain-js',
        description: 'Small sums in plain JavaScript; +1 for the right \\\\boxed{} answer',
        config: { wrong_score: z.number().default(-1).describe('score of a wrong or missing answer') },
        load: async () => fromItems([{ question: 'What is 2 + 2?', answer: '4' }, { question: 'What is 3 * 5?', answer: '15' }]),
        prompt: (item) => [{ role: 'user', content: item.question }],
        parse: (completion) => lastBoxed(completion),
        score: ({ parsed, item, config }) => (parsed === item.answer ? 1 : config.wrong_score),
      });`,
    );
    const out = join(root, 'installed-mjs.jsonl');
    await expectTwoGroups(await installedClotho(scriptedArgs('./env.mjs', out)), out);
    // 2 + 2 scored +1 by the environment's own parse (lastBoxed from 'clotho') and score.
    expect((await readGroups(out)).flatMap((g) => g.scores)).toContain(1);
  });

  it('runs a .ts environment through the installed CLI', async () => {
    // With a type argument, so that the installed CLI has TypeScript to strip.
    const source = (await guideEnvironment()).replace('fromItems([', 'fromItems<{ question: string; answer: string }>([');
    expect(source).toContain('fromItems<{');
    await writeFile(join(installed, 'my-env.ts'), source);
    const out = join(root, 'installed-ts.jsonl');
    await expectTwoGroups(await installedClotho(scriptedArgs('./my-env.ts', out)), out);
  });

  it('lists and runs the built-in environments from the compiled dist/', async () => {
    const list = await installedClotho(['list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^gsm8k\s+Grade-school math/m);
    const out = join(root, 'installed-gsm8k.jsonl');
    await expectTwoGroups(await installedClotho([...scriptedArgs('gsm8k', out), '--env.split', 'test']), out);
  });
});
