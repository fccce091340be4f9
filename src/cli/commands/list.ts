import { ConfigError } from '../../config/config-error.js';
import type { AnyEnvironment } from '../../env/define.js';
import { builtInEnvironments, loadEnvironment } from '../registry.js';
import type { CommandIo } from '../io.js';
import { ENVIRONMENT_SOURCES, environmentSourcesHelp } from '../environment-sources.js';

export const LIST_USAGE = `Usage: clotho list

Lists the built-in environments, one per line: the name to pass to \`clotho process|serve|evaluate|worker\`, then
what the environment does, and then how to bring any other. An environment that fails to load is listed with the
reason; the others still are.`;

/** One built-in environment as listed: its description, or why it could not be loaded. */
export interface EnvironmentEntry {
  name: string;
  description?: string;
  error?: string;
}

/**
 * Loads each environment by itself (a broken one yields an entry with `error` instead of failing the listing),
 * in the order given; `load` is a parameter so that tests can make one fail.
 */
export async function listEnvironments(
  names: readonly string[] = builtInEnvironments(),
  load: (name: string) => Promise<AnyEnvironment> = (name) => loadEnvironment(name),
): Promise<EnvironmentEntry[]> {
  return Promise.all(
    names.map(async (name): Promise<EnvironmentEntry> => {
      try {
        return { name, description: firstLine((await load(name)).description) };
      } catch (error) {
        return { name, error: firstLine(error instanceof Error ? error.message : String(error)) };
      }
    }),
  );
}

/** The entries as aligned rows: `  name  description`, or `  name  (failed to load: reason)`. */
export function formatEnvironments(entries: readonly EnvironmentEntry[], indent = '  '): string[] {
  const width = Math.max(0, ...entries.map((e) => e.name.length));
  return entries.map((e) => `${indent}${e.name.padEnd(width)}  ${e.error === undefined ? e.description : `(failed to load: ${e.error})`}`);
}

/** `clotho list`: prints the built-in environments; exits 1 when one of them fails to load. */
export async function listCommand(argv: string[], io: CommandIo): Promise<number> {
  if (argv.length > 0) throw new ConfigError([`unexpected argument "${argv[0]}"; ${LIST_USAGE.split('\n')[0]}`]);
  const entries = await listEnvironments();
  for (const line of formatEnvironments(entries, '')) io.out(line);
  const others = ENVIRONMENT_SOURCES.filter(([form]) => form !== '<name>');
  io.out(`\n${environmentSourcesHelp('Besides these, process, serve, evaluate and worker take:', others)}`);
  return entries.some((e) => e.error !== undefined) ? 1 : 0;
}

// A description is one line in listings; the rest of a longer one is for the environment's README.
const firstLine = (text: string): string => text.trim().split('\n')[0]!.trim();
