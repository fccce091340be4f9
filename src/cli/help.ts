import { describeFlags } from '../env/config.js';
import { loadEnvironment } from '../env/registry.js';
import { RUN_FLAGS, type PlanOptions } from './run.js';

/**
 * A rollout command's help: its usage, then every flag of the named environment (gsm8k when none is named),
 * with the defaults and the command flags that command runs with.
 */
export async function environmentHelp(usage: string, args: string[], options: PlanOptions = {}): Promise<string> {
  const name = args.find((a) => !a.startsWith('-')) ?? 'gsm8k';
  const loaded = await loadEnvironment(name);
  const definition = { ...loaded, defaults: { ...loaded.defaults, ...options.defaults } };
  const rows = describeFlags(definition, { ...RUN_FLAGS, ...options.commandFlags });
  const width = Math.min(48, Math.max(...rows.map((r) => `${r.flag} ${r.type}`.length)));
  const lines = rows.map((r) => {
    const left = `${r.flag} ${r.type}`.padEnd(width);
    const fallback = r.default === '' ? '' : ` (default ${r.default})`;
    return `  ${left}  ${r.description}${fallback}`;
  });
  return `${usage}\n\nFlags (${name}):\n${lines.join('\n')}`;
}
