import { flagHelp } from '../config/help.js';
import type { CommandOptions } from '../config/resolve-run.js';
import { loadEnvironment } from './registry.js';
import { formatEnvironments, listEnvironments } from './commands/list.js';
import { environmentSourcesHelp } from './environment-sources.js';

/**
 * A rollout command's help: its usage, the ways to bring an environment, then every flag of the named environment
 * (gsm8k when none is named), with the defaults and the command flags that command runs with; when none is named,
 * first the built-in environments with their descriptions.
 * @throws ConfigError when the named environment is unknown; Error when it fails to load.
 */
export async function environmentHelp(
  usage: string,
  args: string[],
  options: CommandOptions = {},
  /** Defaults the command computes itself (from the environment's name), shown instead of the schema's. */
  computedDefaults: (environment: string) => Record<string, string> = () => ({}),
): Promise<string> {
  const named = args.find((a) => !a.startsWith('-'));
  const name = named ?? 'gsm8k';
  const environments = named === undefined ? `\n\nEnvironments:\n${formatEnvironments(await listEnvironments()).join('\n')}` : '';
  const loaded = await loadEnvironment(name);
  const lines = flagHelp(loaded, options, computedDefaults(loaded.name));
  return `${usage}\n\n${environmentSourcesHelp()}${environments}\n\nFlags (${name}):\n${lines.join('\n')}`;
}
