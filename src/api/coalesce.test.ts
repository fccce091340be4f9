import { describe, expect, it } from 'vitest';
import { coalesced } from './coalesce.js';

/** A call whose completions the test releases one by one. */
function controlled() {
  const calls: { items: number[]; finish: () => void }[] = [];
  const call = (items: number[]) =>
    new Promise<number[]>((resolve, reject) => {
      calls.push({ items, finish: () => (items.includes(-1) ? reject(new Error('bad item')) : resolve(items.map((i) => i * 10))) });
    });
  return { calls, call };
}
const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('coalesced', () => {
  it('sends what arrives while a call is in flight together in the next, each caller getting its own results', async () => {
    const { calls, call } = controlled();
    const join = coalesced(call, { lanes: 1, lingerMs: 0 });
    const first = join([1]);
    await flush();
    const second = join([2, 3]);
    const third = join([4]);
    await flush();
    expect(calls.map((c) => c.items)).toEqual([[1]]);
    calls[0]!.finish();
    await expect(first).resolves.toEqual([10]);
    await flush();
    expect(calls.map((c) => c.items)).toEqual([[1], [2, 3, 4]]);
    calls[1]!.finish();
    await expect(second).resolves.toEqual([20, 30]);
    await expect(third).resolves.toEqual([40]);
  });

  it('fails only the caller whose items fail a joined call', async () => {
    const { calls, call } = controlled();
    const join = coalesced(call, { lanes: 1, lingerMs: 0 });
    const first = join([1]);
    await flush();
    const good = join([2]);
    const bad = join([-1]);
    calls[0]!.finish();
    await first;
    await flush();
    calls[1]!.finish(); // [2, -1] fails; each part is tried alone
    await flush();
    expect(calls.slice(2).map((c) => c.items)).toEqual([[2], [-1]]);
    calls[2]!.finish();
    calls[3]!.finish();
    await expect(good).resolves.toEqual([20]);
    await expect(bad).rejects.toThrow('bad item');
  });

  it('waits for announced items before a call starts, and no longer than lingerMs', async () => {
    const { calls, call } = controlled();
    const join = coalesced(call, { lanes: 1, lingerMs: 60_000 });
    const handedOver = join.announce(1);
    const first = join([1]);
    await flush();
    expect(calls).toHaveLength(0); // waiting for the announced item
    const second = join([2]);
    handedOver();
    await flush();
    expect(calls.map((c) => c.items)).toEqual([[1, 2]]);
    calls[0]!.finish();
    await expect(Promise.all([first, second])).resolves.toEqual([[10], [20]]);

    const short = coalesced(call, { lanes: 1, lingerMs: 5 });
    short.announce(1); // never handed over
    const alone = short([3]);
    await expect.poll(() => calls.length, { timeout: 5_000 }).toBe(2);
    calls[1]!.finish();
    await expect(alone).resolves.toEqual([30]);
  });
});
