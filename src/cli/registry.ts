import { existsSync, readFileSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { register } from 'node:module';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { ConfigError } from '../config/config-error.js';
import type { AnyEnvironment } from '../env/define.js';

/** Built-in environments, imported only when asked for so that one broken environment cannot break the others. */
const BUILT_IN: Record<string, () => Promise<{ default: unknown }>> = {
  gsm8k: () => import('../../environments/gsm8k/index.js'),
  tool_calling: () => import('../../environments/tool_calling/index.js'),
  tool_use: () => import('../../environments/tool_use/index.js'),
  fundamental_prediction: () => import('../../environments/fundamental_prediction/index.js'),
  mcqa: () => import('../../environments/mcqa/index.js'),
  rlaif: () => import('../../environments/rlaif/index.js'),
  multimodal: () => import('../../environments/multimodal/index.js'),
  dataset: () => import('../../environments/dataset/index.js'),
  code_execution: () => import('../../environments/code_execution/index.js'),
  games: () => import('../../environments/games/index.js'),
  blackjack: () => import('../../environments/games/blackjack.js'),
  taxi: () => import('../../environments/games/taxi.js'),
  text_adventure: () => import('../../environments/games/adventure.js'),
  lowercase: () => import('../../environments/lowercase/index.js'),
  bugfix: () => import('../../environments/bugfix/index.js'),
};

/** Names of the built-in environments. */
export const builtInEnvironments = (): string[] => Object.keys(BUILT_IN);

const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', 'expected a function');
// Checks the shape of a module's default export; the parts' types are the module's own business.
const DefinitionSchema = z.looseObject({
  name: z.string().min(1),
  description: z.string(),
  // Duck-typed: a module may bring its own copy of zod, whose classes `instanceof` would not know.
  config: z.record(
    z.string(),
    z.custom((v) => typeof v === 'object' && v !== null && '_zod' in v, 'expected a zod schema'),
  ),
  load: fn,
  prompt: fn,
  parse: fn,
  // defineEnvironment binds a reward list into one function; an object made without it must give the function.
  score: z.custom((v) => typeof v === 'function', 'expected a function (defineEnvironment makes one of a reward list)'),
  step: fn.optional(),
  evaluate: fn.optional(),
  harness: z.looseObject({ agent: fn, workspace: fn, task: fn, check: fn }).optional(),
});

// `my-env` or `@scope/my-env`: anything else with a slash, or a script's extension, is a path.
const PACKAGE_NAME = /^(@[a-z0-9][\w.~-]*\/)?[a-z0-9][\w.~-]*$/i;
const isPackageName = (name: string): boolean => PACKAGE_NAME.test(name) && !/\.[cm]?[jt]sx?$/.test(name) && !name.startsWith('.');

/**
 * Loads an environment: a built-in name (`gsm8k`), a path to a module (`./my-env.ts`, relative to the working
 * directory), or the name of an npm package installed where the command runs (`my-clotho-env`); the module's
 * default export is the definition.
 * @throws ConfigError (a usage error) when `name` is none of these; Error when the module is missing, fails to
 *   load (naming the file), or exports no definition.
 */
export async function loadEnvironment(name: string, cwd: string = process.cwd()): Promise<AnyEnvironment> {
  const builtIn = BUILT_IN[name];
  let exported: unknown;
  let where = name;
  if (builtIn) exported = (await builtIn()).default;
  else if (isPackageName(name)) {
    const entry = resolvePackage(name, cwd);
    if (!entry) {
      throw new ConfigError([
        `unknown environment "${name}"; known: ${builtInEnvironments().join(', ')} (built in); no package of that name is` +
          ` installed in ${cwd}, and a file needs a path (./my-env.ts)`,
      ]);
    }
    where = `${name} (${entry})`;
    exported = await importDefault(entry, where);
  } else {
    const given = isAbsolute(name) ? name : resolve(cwd, name);
    const file = await realpath(given).catch(() => null);
    if (!file) throw new ConfigError([`environment module not found: ${given}`]);
    where = file;
    forceEsm(file);
    exported = await importDefault(file, where);
  }
  const result = DefinitionSchema.safeParse(exported);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.') || 'default export'}: ${i.message}`);
    throw new Error(`${where} does not export an environment definition as default:\n  ${problems.join('\n  ')}`);
  }
  return exported as AnyEnvironment;
}

async function importDefault(file: string, where: string): Promise<unknown> {
  try {
    return ((await import(pathToFileURL(file).href)) as { default?: unknown }).default;
  } catch (error) {
    throw new Error(`cannot load environment ${where}: ${(error as Error).message}`, { cause: error });
  }
}

// Runs on Node's module-loader thread, after tsx's hooks (bin/clotho.js registers tsx first). A user's file is
// written as an ES module whatever the package.json of its folder says (none: CommonJS to Node and tsx, and an
// `import` in a file loaded as CommonJS fails with ERR_REQUIRE_CYCLE_MODULE); so the entry, and the TypeScript
// files it imports by path, load as ES modules. Packages (bare names) keep their own `type`.
const ESM_HOOK = `
const own = new Set();
const bare = (url) => url.replace(/[?#].*$/, '');
export function initialize(entry) { own.add(entry); }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  const url = bare(result.url);
  const byPath = /^(\\.{0,2}\\/|file:)/.test(specifier) && own.has(bare(context.parentURL ?? '')) && /\\.m?tsx?$/.test(url);
  if (!url.startsWith('file:') || url.includes('/node_modules/') || !(own.has(url) || byPath)) return result;
  own.add(url);
  return { ...result, format: 'module' };
}`;

function forceEsm(file: string): void {
  if (/\.[cm]?[jt]sx?$/.test(file) && !/\.c[jt]s$/.test(file)) {
    register(`data:text/javascript,${encodeURIComponent(ESM_HOOK)}`, { data: pathToFileURL(file).href });
  }
}

/**
 * The entry file of an installed package, found as Node's ES-module resolver finds it from `cwd`: the nearest
 * `node_modules/<name>`, then its `exports` for `.` (conditions import, node, default), else `main`, else index.js.
 */
function resolvePackage(name: string, cwd: string): string | null {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const root = join(dir, 'node_modules', name);
    if (existsSync(join(root, 'package.json'))) {
      const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports?: unknown; main?: string };
      const target = manifest.exports === undefined ? (manifest.main ?? 'index.js') : exportTarget(manifest.exports);
      if (target === undefined) throw new Error(`package ${name} (${root}) exports no "." entry for import`);
      const entry = join(root, target);
      if (!existsSync(entry)) throw new Error(`package ${name}: its entry ${entry} does not exist`);
      return entry;
    }
    if (dirname(dir) === dir) return null;
  }
}

const CONDITIONS = new Set(['import', 'node', 'default']);

function exportTarget(exports: unknown): string | undefined {
  if (typeof exports === 'string') return exports;
  if (Array.isArray(exports)) return exports.map(exportTarget).find((t) => t !== undefined);
  if (typeof exports !== 'object' || exports === null) return undefined;
  const entries = Object.entries(exports);
  const dot = entries.find(([key]) => key === '.');
  if (dot) return exportTarget(dot[1]);
  for (const [condition, value] of entries) {
    const target = CONDITIONS.has(condition) ? exportTarget(value) : undefined;
    if (target !== undefined) return target;
  }
  return undefined;
}
