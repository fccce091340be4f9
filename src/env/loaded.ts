import type { BaseEnvConfig } from '../config/schemas.js';
import type { AnyEnvironment, ItemSource } from './define.js';

/** An environment ready to serve activities: its definition, resolved config and loaded items. */
export interface LoadedEnvironment {
  definition: AnyEnvironment;
  // The config type is the environment's own; activities pass it back to the definition untouched.
  config: BaseEnvConfig & Record<string, unknown>;
  /** The environment's items, any index wrapped to 0 … size-1 ({@link wrapped}). */
  items: ItemSource<unknown>;
}

/** Loads an environment's data once for a worker process. */
export async function loadEnvironmentData(definition: AnyEnvironment, config: LoadedEnvironment['config']): Promise<LoadedEnvironment> {
  const items = await definition.load(config);
  if (!Number.isInteger(items.size) || items.size <= 0) {
    throw new Error(`environment '${definition.name}' loaded no items (size ${items.size}; a positive whole number is needed)`);
  }
  return { definition, config, items: wrapped(items) };
}

/**
 * The one place item indices wrap: the run's item `i` (any integer; epochs run past the end) is the environment's
 * `get(i mod size)`, so its `get` only ever sees 0 ≤ index < size, as {@link ItemSource} promises.
 */
export function wrapped<Item>(items: ItemSource<Item>): ItemSource<Item> {
  const { size } = items;
  return { size, get: (index) => items.get(((index % size) + size) % size) };
}

/** Looks up an environment served by this worker. */
export function environmentNamed(environments: Record<string, LoadedEnvironment>, name: string): LoadedEnvironment {
  const found = environments[name];
  if (!found) throw new Error(`this worker does not serve environment '${name}' (it serves: ${Object.keys(environments).join(', ')})`);
  return found;
}
