import { allHandlersFinished, condition, continueAsNew, log, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { BatcherActivities } from '../activities/batcher.js';
import type { TrainerActivities } from '../activities/trainer.js';
import type { TrainerRegistration } from '../schema/api.js';
import type { BatcherView, GroupRef, TrainerMode } from '../schema/batcher.js';
import type { StoreRef } from '../schema/rollout.js';
import { computeEnvStatus, disconnectEnv, envAt, registerEnv } from './batcher-envs.js';
import { pushRooms, watchRoom, type RoomWatch } from './batcher-room.js';
import { endSuperseded, supersede, type BatcherResult } from './batcher-supersede.js';
import {
  ackBatch,
  batcherMetrics,
  createBatcherState,
  dropBatch,
  expireLeases,
  ingestGroups,
  recordDrops,
  registerTrainer,
  renewLeases,
  resetData,
  takeBatch,
  waitingGroupsPage,
  type BatcherOptions,
  type BatcherState,
} from './batcher-state.js';
import {
  ackBatchUpdate,
  batchQuery,
  batcherViewQuery,
  disconnectEnvUpdate,
  ingestGroupsSignal,
  ingestGroupsUpdate,
  recordDropsSignal,
  registerEnvUpdate,
  registerTrainerUpdate,
  renewLeasesUpdate,
  resetUpdate,
  statusEnvQuery,
  supersedeBatcherSignal,
  takeBatchUpdate,
  waitingGroupsQuery,
  watchRoomSignal,
  type BatcherSuperseded,
} from './messages.js';

export interface BatcherInput {
  options?: Partial<BatcherOptions>;
  trainer: TrainerMode;
  /** State carried through continue-as-new: inline when small, through the store when large. */
  state?: BatcherState;
  stateRef?: StoreRef;
  /** Env-runs watching their room, and the last version pushed, carried through continue-as-new. */
  watches?: RoomWatch[];
  roomVersion?: number;
  /**
   * The batcher of the training run this one supersedes, and why: told to end as this run's first act
   * (`batcher-supersede.ts`). Only a new run's first input has it; runs started before it never do.
   */
  supersedes?: { batcherId: string; reason: string };
}

/** Inline state above this size goes through the store on continue-as-new (payloads error at 2 MiB). */
const INLINE_STATE_LIMIT = 512 * 1024;
/** Signals and updates per run before continuing as new (Temporal allows 2,000 updates and 10,000 signals). */
const CHANGES_PER_RUN = 1_000;
/** A trainStep holds its batch until it completes or its trainer stops heartbeating (then Temporal retries it). */
const TRAINER_LEASE_MS = 365 * 24 * 3600 * 1000;
/** The Python trainer worker heartbeats every 5 s by default. */
const DEFAULT_TRAINER_HEARTBEAT_MS = 20_000;

/**
 * The batcher of one training run: Atropos's queue, buffers, batches, step counter and env registry, as
 * a thin shell around the pure state module. Envs' groups arrive as signals (from env-runs) or updates
 * (from the HTTP API, which must answer Atropos's status); readings are queries.
 */
export async function batcher(input: BatcherInput): Promise<BatcherResult> {
  const { saveBatcherState, loadBatcherState } = proxyActivities<BatcherActivities>({
    startToCloseTimeout: '1 minute',
    retry: { maximumInterval: '10 seconds' },
  });
  const state = input.state ?? (input.stateRef ? await loadBatcherState(input.stateRef) : createBatcherState(input.options));
  // Handled signals and updates (and trainer steps): each adds to the run's history and its per-run limits.
  let changes = 0;
  const changed = <T>(result: T): T => {
    changes++;
    return result;
  };
  const temporalTrainer = input.trainer.kind === 'temporal';
  const watches = input.watches ?? [];
  const roomVersion = { value: input.roomVersion ?? 0 };
  const knownEnvs = (groups: GroupRef[]) => {
    const unknown = groups.filter((g) => g.envId !== null && !envAt(state, g.envId)).map((g) => g.envId);
    if (unknown.length > 0) throw new Error(`unknown env_id ${[...new Set(unknown)].join(', ')}`);
  };

  setHandler(ingestGroupsSignal, (groups) => changed(void ingestGroups(state, groups)));
  setHandler(recordDropsSignal, ({ envId, dropped }) => changed(recordDrops(state, envId, dropped)));
  setHandler(watchRoomSignal, ({ workflowId, envId }) => changed(watchRoom(watches, workflowId, envId)));
  setHandler(ingestGroupsUpdate, (groups) => changed(ingestGroups(state, groups).results), { validator: knownEnvs });
  setHandler(registerTrainerUpdate, (registration) => changed(registerTrainer(state, registration)));
  setHandler(registerEnvUpdate, (env) => changed(registerEnv(state, env, Date.now())));
  setHandler(disconnectEnvUpdate, (envId) => changed(disconnectEnv(state, envId)));
  setHandler(
    takeBatchUpdate,
    ({ leaseMs }) => {
      expireLeases(state, Date.now());
      return changed(takeBatch(state, leaseMs ? { now: Date.now(), durationMs: leaseMs } : undefined));
    },
    {
      validator: (_request) => {
        if (temporalTrainer) throw new Error('batches go to the trainer task queue (--trainer temporal), not to GET /batch');
      },
    },
  );
  setHandler(ackBatchUpdate, (leaseId) => changed(ackBatch(state, leaseId, Date.now())));
  setHandler(renewLeasesUpdate, ({ leaseIds, durationMs }) => changed(renewLeases(state, leaseIds, Date.now(), durationMs)), {
    validator: ({ leaseIds, durationMs }) => {
      if (!Array.isArray(leaseIds) || leaseIds.length === 0 || leaseIds.some((id) => typeof id !== 'string' || id === ''))
        throw new Error('renewLeases: leaseIds must be a non-empty list of lease ids');
      if (typeof durationMs !== 'number' || !(durationMs > 0) || !Number.isFinite(durationMs))
        throw new Error(`renewLeases: durationMs must be a positive number of milliseconds, got ${String(durationMs)}`);
    },
  });
  let superseded: BatcherSuperseded | null = null;
  setHandler(supersedeBatcherSignal, (request) => changed(void (superseded ??= request)));
  setHandler(resetUpdate, () => changed(resetData(state).length));
  setHandler(statusEnvQuery, (envId) => computeEnvStatus(state, envId)?.status ?? null);
  setHandler(batchQuery, (batchId) => [...state.formed, ...state.leases].find((b) => b.batchId === batchId)?.groups ?? null);
  setHandler(batcherViewQuery, () => view(state, input.trainer.kind));
  setHandler(waitingGroupsQuery, ({ offset, limit }) => waitingGroupsPage(state, offset, limit));

  const ended = () => superseded !== null;
  const stop = () => workflowInfo().continueAsNewSuggested || changes >= CHANGES_PER_RUN || ended();
  // Branches issue commands side by side (trainer steps, room pushes, the supersession): all are regular activities and
  // signals, whose order on replay follows the history. Never add a local activity beside them.
  const countError = (told: boolean) => {
    if (!told) state.counters.supersessionErrors = (state.counters.supersessionErrors ?? 0) + 1;
  };
  const superseding = input.supersedes && supersede(input.supersedes.batcherId, input.supersedes.reason).then(countError);
  const pushing = pushRooms(state, watches, stop, roomVersion);
  const working = input.trainer.kind === 'temporal' ? feedTrainer(state, input.trainer, () => changes, stop) : condition(stop);
  // Superseded, the run ends at once, a trainStep in flight with it (as when it was terminated).
  await Promise.race([working, condition(ended)]);
  await superseding;
  if (superseded) return endSuperseded(watches, superseded);
  await pushing;

  await condition(allHandlersFinished);
  const size = JSON.stringify(state).length;
  const next: BatcherInput = { trainer: input.trainer, watches, roomVersion: roomVersion.value };
  if (size > INLINE_STATE_LIMIT) next.stateRef = await saveBatcherState(state, workflowInfo().runId);
  else next.state = state;
  // A supersession that came while this run was closing ends it here rather than be carried nowhere.
  if (superseded) return endSuperseded(watches, superseded);
  return continueAsNew<typeof batcher>(next);
}

/**
 * `--trainer temporal`: every formed batch becomes a `trainStep` activity on the trainer's task queue, one at a
 * time in step order, retried until a trainer completes it; its completion is the ack. The trainer heartbeats
 * while it trains, so the batch of a trainer that died goes to another one within the heartbeat timeout.
 */
async function feedTrainer(
  state: BatcherState,
  trainer: Extract<TrainerMode, { kind: 'temporal' }>,
  changes: () => number,
  stop: () => boolean,
): Promise<void> {
  // Retention never fails a batch: the activity reports its own errors, and a few quick attempts cover a restart.
  const { releaseTrainedGroups } = proxyActivities<BatcherActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 5 } });
  const { trainStep } = proxyActivities<TrainerActivities>({
    taskQueue: trainer.taskQueue,
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: trainer.heartbeatTimeoutMs ?? DEFAULT_TRAINER_HEARTBEAT_MS,
    // No maximumAttempts: retried until a trainer completes it.
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
  });
  let seen = -1;
  while (!stop()) {
    await condition(() => changes() !== seen || stop());
    seen = changes();
    const batch = takeBatch(state, { now: Date.now(), durationMs: TRAINER_LEASE_MS }, 'oldest');
    if (batch.status !== 'batch') continue;
    const refs = batch.groups.map((g) => g.ref);
    let trained = false;
    try {
      await trainStep({ batchId: batch.batchId, step: batch.step, groups: refs });
      ackBatch(state, batch.batchId);
      trained = true;
    } catch (error) {
      // Only a trainer's non-retryable failure ends up here (retries are unlimited): drop the batch, counted,
      // rather than let one bad batch stop the batcher.
      log.error('trainer refused a batch; its groups are dropped', { batchId: batch.batchId, error: String(error) });
      dropBatch(state, batch.batchId, 'trainer_failed');
    }
    // The trainer's completion is the ack `--retention ack` waits for; the batcher worker's process applies the policy.
    // Blobs left by a release that failed are the age sweep's; the batch stays trained.
    if (trained) {
      await releaseTrainedGroups(refs).catch((error) =>
        log.warn('trained groups not released', { batchId: batch.batchId, error: String(error) }),
      );
    }
    seen = -1;
  }
}

function view(state: BatcherState, trainerMode: TrainerMode['kind']): BatcherView {
  return {
    registered: state.registered,
    info: { batch_size: state.batchSize, max_token_len: state.maxTokenLen },
    wandb: { group: state.wandbGroup, project: state.wandbProject },
    status: state.registered ? { current_step: state.step, queue_size: state.queue.length } : { current_step: 0, queue_size: 0 },
    latest: state.latest,
    metrics: batcherMetrics(state),
    envs: state.envs.map((e) => ({ envId: e.registered_id, name: e.real_name, connected: e.connected })),
    trainer: state.registered ? registrationOf(state) : null,
    trainerMode,
  };
}

/** The trainer's registration as the batcher holds it now: `starting_step` is where its step counter is. */
function registrationOf(state: BatcherState): TrainerRegistration {
  return {
    wandb_group: state.wandbGroup,
    wandb_project: state.wandbProject,
    batch_size: state.batchSize,
    max_token_len: state.maxTokenLen,
    checkpoint_dir: state.checkpointDir,
    save_checkpoint_interval: state.saveCheckpointInterval,
    starting_step: state.step,
    num_steps: state.numSteps,
  };
}
