import type { StoreRef } from '../schema/rollout.js';
import { storeKey, type TrajectoryStore } from '../store/trajectory-store.js';
import type { BatcherState } from '../workflows/batcher-state.js';

/**
 * The batcher's activities: its state through the store when it is too big for a payload, and the release of a batch
 * a `--trainer temporal` trainer has trained (`onTrained`: what `clotho api --retention` does with delivered groups).
 */
export function createBatcherActivities({ store, onTrained }: { store: TrajectoryStore; onTrained?: (refs: string[]) => Promise<void> }) {
  return {
    async releaseTrainedGroups(refs: string[]): Promise<void> {
      await onTrained?.(refs);
    },
    async saveBatcherState(state: BatcherState, runId: string): Promise<StoreRef> {
      return store.put(storeKey('batcher', `state-${runId}`), state);
    },
    async loadBatcherState(ref: StoreRef): Promise<BatcherState> {
      return store.get<BatcherState>(ref);
    },
  };
}

export type BatcherActivities = ReturnType<typeof createBatcherActivities>;
