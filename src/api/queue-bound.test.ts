import { describe, expect, it } from 'vitest';
import { DEPTH_REFRESH_MS, QueueBound } from './queue-bound.js';
import { QueueFullError } from './service.js';

/** A bound over a batcher whose depth the test sets, on a clock the test moves. */
function bound(maxGroups: number) {
  const batcher = { waiting: 0, reads: 0 };
  const clock = { now: 0 };
  const queue = new QueueBound(
    maxGroups,
    async () => {
      batcher.reads++;
      return batcher.waiting;
    },
    () => clock.now,
  );
  return { queue, batcher, clock };
}

describe('QueueBound', () => {
  it('admits while the batcher plus what is on its way stays below the bound, without reading the batcher', async () => {
    const { queue, batcher } = bound(3);
    const first = await queue.admit(2);
    await queue.admit(1);
    await expect(queue.admit(1)).rejects.toBeInstanceOf(QueueFullError);
    first();
    first();
    // Released once only, however often it is called: one group of room.
    await queue.admit(1);
    expect(batcher.reads).toBe(1);
  });

  it('refuses with the figures and the retry delay, counting posts and groups', async () => {
    const { queue } = bound(2);
    queue.report(2);
    const refusal = await queue.admit(5).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(QueueFullError);
    expect(refusal).toMatchObject({ waiting: 2, maxGroups: 2, retryAfterSeconds: DEPTH_REFRESH_MS / 1000 });
    await expect(queue.admit(1)).rejects.toBeInstanceOf(QueueFullError);
    expect(queue.refused).toEqual({ posts: 2, groups: 6 });
  });

  it('reads the batcher again, at most once a refresh interval, only when it would refuse', async () => {
    const { queue, batcher, clock } = bound(2);
    queue.report(2);
    await expect(queue.admit(1)).rejects.toBeInstanceOf(QueueFullError);
    expect(batcher.reads).toBe(0);
    // The trainer took batches; the API learns it once its figure is old enough.
    batcher.waiting = 0;
    clock.now = DEPTH_REFRESH_MS - 1;
    await expect(queue.admit(1)).rejects.toBeInstanceOf(QueueFullError);
    clock.now = DEPTH_REFRESH_MS;
    await queue.admit(1);
    expect(batcher.reads).toBe(1);
  });

  it('shares one reading among refusals that come together', async () => {
    const { queue, batcher, clock } = bound(1);
    queue.report(5);
    clock.now = DEPTH_REFRESH_MS;
    batcher.waiting = 5;
    const results = await Promise.allSettled([queue.admit(1), queue.admit(1), queue.admit(1)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(batcher.reads).toBe(1);
  });

  it('lets a post larger than the bound through an empty queue', async () => {
    const { queue } = bound(2);
    queue.report(0);
    await queue.admit(10);
    await expect(queue.admit(1)).rejects.toBeInstanceOf(QueueFullError);
  });
});
