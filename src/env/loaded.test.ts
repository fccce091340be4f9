import { describe, expect, it } from 'vitest';
import { defineEnvironment, fromItems, type ItemSource } from './define.js';
import { loadEnvironmentData } from './loaded.js';
import { resolveEnvConfig } from './testing.js';

/** An environment of `size` items that records every index its `get` is given. */
function recording(source: () => ItemSource<string>) {
  const asked: number[] = [];
  const definition = defineEnvironment({
    name: 'recording',
    description: 'records the indices its items are read at',
    config: {},
    load: async () => {
      const items = source();
      return { size: items.size, get: (index: number) => (asked.push(index), items.get(index)) };
    },
    prompt: () => [],
    parse: (completion) => completion,
    score: () => 0,
  });
  const load = () => loadEnvironmentData(definition, resolveEnvConfig(definition));
  return { asked, load };
}

describe('the item-index contract', () => {
  it('wraps every run index in the runtime, so an environment get sees only 0 ≤ index < size', async () => {
    const { asked, load } = recording(() => fromItems(['a', 'b', 'c']));
    const { items } = await load();
    const indices = [0, 2, 3, 4, 7, 3 * 1_000_000 + 1, -1, -4, 2 ** 40];
    expect(indices.map((i) => items.get(i))).toEqual(['a', 'c', 'a', 'b', 'b', 'b', 'c', 'c', 'b']);
    expect(asked).toEqual([0, 2, 0, 1, 1, 1, 2, 2, 1]);
    expect(asked.every((i) => Number.isInteger(i) && i >= 0 && i < 3)).toBe(true);
    expect(items.size).toBe(3);
  });

  it('refuses a source with no items, or a size that is no whole number', async () => {
    await expect(recording(() => fromItems([])).load()).rejects.toThrow("environment 'recording' loaded no items");
    await expect(recording(() => ({ size: 2.5, get: () => 'x' })).load()).rejects.toThrow('a positive whole number is needed');
  });
});

describe('fromItems', () => {
  it('serves an array as it is: its length, and its items by index', () => {
    const rows = [
      { q: '1 + 1', a: 2 },
      { q: '2 + 2', a: 4 },
    ];
    const source = fromItems(rows);
    expect(source.size).toBe(2);
    expect(source.get(1)).toBe(rows[1]);
  });
});
