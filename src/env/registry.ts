import { access } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import type { AnyEnvironment } from './define.js';

/** Built-in environments, imported only when asked for so that one broken environment cannot break the others. */
const BUILT_IN: Record<string, () => Promise<{ default: unknown }>> = {
  gsm8k: () => import('../../environments/gsm8k/index.js'),
};

/** Names of the built-in environments. */
export const builtInEnvironments = (): string[] => Object.keys(BUILT_IN);

const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', 'expected a function');
// Checks the shape of a module's default export; the parts' types are the module's own business.
const DefinitionSchema = z.looseObject({
  name: z.string().min(1),
  description: z.string(),
  // Duck-typed: a module may bring its own copy of zod, whose classes `instanceof` would not know.
  config: z.record(z.string(), z.custom((v) => typeof v === 'object' && v !== null && '_zod' in v, 'expected a zod schema')),
  load: fn,
  prompt: fn,
  parse: fn,
  score: fn,
  step: fn.optional(),
  evaluate: fn.optional(),
});

const looksLikePath = (name: string): boolean => /[\\/]/.test(name) || /\.[cm]?[jt]s$/.test(name);

/**
 * Loads an environment by built-in name (`gsm8k`) or by path to a module whose default export is
 * an environment definition (relative paths resolve against the working directory).
 * @throws Error listing the known names when `name` is neither.
 */
export async function loadEnvironment(name: string): Promise<AnyEnvironment> {
  const builtIn = BUILT_IN[name];
  let exported: unknown;
  let where = name;
  if (builtIn) exported = (await builtIn()).default;
  else if (looksLikePath(name)) {
    const file = resolve(name);
    where = file;
    if (!(await access(file).then(() => true, () => false))) throw new Error(`environment module not found: ${file}`);
    exported = ((await import(pathToFileURL(file).href)) as { default?: unknown }).default;
  } else {
    throw new Error(`unknown environment "${name}"; known: ${builtInEnvironments().join(', ')} (or a path to a module)`);
  }
  const result = DefinitionSchema.safeParse(exported);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.') || 'default export'}: ${i.message}`);
    throw new Error(`${where} does not export an environment definition as default:\n  ${problems.join('\n  ')}`);
  }
  return exported as AnyEnvironment;
}
