import type { StoreRef } from '../schema/rollout.js';
import { storeKey, type TrajectoryStore } from '../store/trajectory-store.js';
import type { BatcherState } from '../workflows/batcher-state.js';

/** The batcher's activities: its state through the store when it is too big for a payload. */
export function createBatcherActivities({ store }: { store: TrajectoryStore }) {
  return {
    async saveBatcherState(state: BatcherState, runId: string): Promise<StoreRef> {
      return store.put(storeKey('batcher', `state-${runId}`), state);
    },
    async loadBatcherState(ref: StoreRef): Promise<BatcherState> {
      return store.get<BatcherState>(ref);
    },
  };
}

export type BatcherActivities = ReturnType<typeof createBatcherActivities>;
