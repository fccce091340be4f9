import type { BaseEnvConfig } from '../schema/config.js';
import type { AnyEnvironment, ItemSource } from './define.js';

/** An environment ready to serve activities: its definition, resolved config and loaded items. */
export interface LoadedEnvironment {
  definition: AnyEnvironment;
  // The config type is the environment's own; activities pass it back to the definition untouched.
  config: BaseEnvConfig & Record<string, unknown>;
  items: ItemSource<unknown>;
}

/** Loads an environment's data once for a worker process. */
export async function loadEnvironmentData(
  definition: AnyEnvironment,
  config: LoadedEnvironment['config'],
): Promise<LoadedEnvironment> {
  const items = await definition.load(config);
  if (items.size <= 0) throw new Error(`environment '${definition.name}' loaded no items`);
  return { definition, config, items };
}

/** Looks up an environment served by this worker. */
export function environmentNamed(environments: Record<string, LoadedEnvironment>, name: string): LoadedEnvironment {
  const found = environments[name];
  if (!found) throw new Error(`this worker does not serve environment '${name}' (it serves: ${Object.keys(environments).join(', ')})`);
  return found;
}
