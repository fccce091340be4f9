import { describeFlags } from '../env/config.js';
import { loadEnvironment } from './registry.js';
import { formatEnvironments, listEnvironments } from './commands/list.js';
import { RUN_FLAGS, type PlanOptions } from './run.js';

/**
 * A rollout command's help: its usage, then every flag of the named environment (gsm8k when none is named),
 * with the defaults and the command flags that command runs with; when none is named, first the built-in
 * environments with their descriptions.
 * @throws ConfigError when the named environment is unknown; Error when it fails to load.
 */
export async function environmentHelp(
  usage: string,
  args: string[],
  options: PlanOptions = {},
  /** Defaults the command computes itself (from the environment's name), shown instead of the schema's. */
  computedDefaults: (environment: string) => Record<string, string> = () => ({}),
): Promise<string> {
  const named = args.find((a) => !a.startsWith('-'));
  const name = named ?? 'gsm8k';
  const environments = named === undefined ? `\n\nEnvironments:\n${formatEnvironments(await listEnvironments()).join('\n')}` : '';
  const loaded = await loadEnvironment(name);
  const definition = { ...loaded, defaults: { ...loaded.defaults, ...options.defaults } };
  const computed = computedDefaults(definition.name);
  const rows = describeFlags(definition, { ...RUN_FLAGS, ...options.commandFlags }).map((r) =>
    r.flag in computed ? { ...r, default: computed[r.flag]! } : r,
  );
  const width = Math.min(48, Math.max(...rows.map((r) => `${r.flag} ${r.type}`.length)));
  const lines = rows.map((r) => {
    const left = `${r.flag} ${r.type}`.padEnd(width);
    const fallback = r.default === '' ? '' : ` (default ${r.default})`;
    return `  ${left}  ${r.description}${fallback}`;
  });
  return `${usage}${environments}\n\nFlags (${name}):\n${lines.join('\n')}`;
}
