import type { Client } from '@temporalio/client';
import type { StoreRef } from '../schema/rollout.js';
import { storeKey, type TrajectoryStore } from '../store/trajectory-store.js';
import type { BatcherState } from '../workflows/batcher-state.js';
import { batcherViewQuery, statusEnvQuery } from '../workflows/messages.js';

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

/** How much room an environment has in the batcher, as Atropos's envs read it from `/status-env`. */
export interface BatcherRoom {
  currentStep: number;
  batchSize: number;
  /** This env's groups waiting in the batcher's queue (in its group size). */
  queuedGroups: number;
  /** This env's groups the batcher has taken in so far; signals still on their way are not counted yet. */
  receivedGroups: number;
}

/** Activities of env-runs that feed a batcher (`clotho serve`): they read its backpressure through Temporal, no HTTP. */
export function createBatcherClientActivities({ client }: { client: Client }) {
  return {
    async batcherRoom({ workflowId, envId }: { workflowId: string; envId: number }): Promise<BatcherRoom> {
      const handle = client.workflow.getHandle(workflowId);
      const [status, view] = await Promise.all([handle.query(statusEnvQuery, envId), handle.query(batcherViewQuery)]);
      if (!status) throw new Error(`batcher ${workflowId} does not know env_id ${envId} (was it reset?)`);
      const received = view.metrics.counters.perEnv[String(envId)];
      return {
        currentStep: status.current_step,
        batchSize: view.info.batch_size,
        queuedGroups: status.self_queue_size,
        receivedGroups: (received?.received ?? 0) + (received?.duplicates ?? 0),
      };
    },
  };
}

export type BatcherClientActivities = ReturnType<typeof createBatcherClientActivities>;
