import { describeFlags } from '../env/config.js';
import { loadEnvironment } from '../env/registry.js';
import { RUN_FLAGS } from './run.js';

/** A rollout command's help: its usage, then every flag of the named environment (or of the base config). */
export async function environmentHelp(usage: string, args: string[]): Promise<string> {
  const name = args.find((a) => !a.startsWith('-')) ?? 'gsm8k';
  const rows = describeFlags(await loadEnvironment(name), RUN_FLAGS);
  const width = Math.min(48, Math.max(...rows.map((r) => `${r.flag} ${r.type}`.length)));
  const lines = rows.map((r) => {
    const left = `${r.flag} ${r.type}`.padEnd(width);
    const fallback = r.default === '' ? '' : ` (default ${r.default})`;
    return `  ${left}  ${r.description}${fallback}`;
  });
  return `${usage}\n\nFlags (${name}):\n${lines.join('\n')}`;
}
