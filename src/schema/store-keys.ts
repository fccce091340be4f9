/**
 * The trajectory store's keys, defined once for every layer, workflows included (no imports: workflow code loads this
 * module). A rollout group's entries lie under `<run>/<environment>/item-<i>/` (`groupOfRecord`, src/store).
 */

const KEY = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

/** Store keys: `<run>/<environment>/item-<i>/<part>`; all parts are checked against path tricks. */
export function storeKey(...parts: (string | number)[]): string {
  const key = parts.join('/');
  if (!KEY.test(key) || key.split('/').some((p) => p === '.' || p === '..')) {
    throw new Error(`invalid store key "${key}"`);
  }
  return key;
}

/** The key of item i's rollout group, under which all its entries lie: `<run>/<environment>/item-<i>`. */
export function itemKey(runId: string, environment: string, itemIndex: number): string {
  return storeKey(runId, environment, `item-${itemIndex}`);
}
