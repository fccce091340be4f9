import { createHash } from 'node:crypto';
import { storeKey, type TrajectoryStore } from '../store/trajectory-store.js';

/**
 * The durable record of idempotency keys a batcher took in, in the trajectory store: the batcher itself remembers
 * only the most recent keys (`seenCapacity`), this record makes a key a duplicate for the batcher's whole life.
 *
 * A key is recorded only once the batcher has answered for its group. Recording it before could lose the group (a
 * crash after the record and before the batcher took it in would make every retry a "duplicate"); recording it
 * after leaves a crash between the two, and the retry that follows such a crash finds the key in the batcher's
 * window instead, which answers it as a duplicate and has the key recorded then. Only a retry that comes after
 * more than `seenCapacity` other keys, following a crash at that moment, could queue a group twice.
 *
 * `/reset_data` does not clear the record: a key names one group, and a retry of a post from before a reset is
 * that group, which the reset dropped.
 */
export interface AcceptedKeys {
  /** True when the batcher took in a group under this key before. */
  has(idempotencyKey: string): Promise<boolean>;
  /** Records that the batcher took in (or already knew) a group under this key. */
  record(idempotencyKey: string): Promise<void>;
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex');

/** The record of the batcher `batcherId`; batchers sharing a store keep apart. */
export function acceptedKeys(store: TrajectoryStore, batcherId: string): AcceptedKeys {
  const keyOf = (idempotencyKey: string) => storeKey('api-accepted', digest(batcherId).slice(0, 32), digest(idempotencyKey));
  return {
    has: async (idempotencyKey) => (await store.tryGet(keyOf(idempotencyKey))) !== undefined,
    async record(idempotencyKey) {
      await store.put(keyOf(idempotencyKey), { idempotency_key: idempotencyKey });
    },
  };
}
