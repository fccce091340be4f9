import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DisconnectEnvResponse, EnvRegistration, RegisterEnvResponse, StatusEnv, TrainerRegistration } from '../schema/api.js';
import type {
  AckStatus,
  BatcherIngestResult,
  BatcherView,
  GroupRef,
  LeaseRenewal,
  RecordDrops,
  RegisterTrainerResult,
  RenewLeasesRequest,
  TakeBatchRequest,
  TakeResult,
  WaitingGroupsPage,
  WaitingGroupsRequest,
  WatchRoom,
} from '../schema/batcher.js';
import type { BatcherRoom, EnvRunStatus } from '../schema/rollout.js';

/**
 * Everything a client needs to talk to Clotho's workflows, beside them and not inside them: every signal, query
 * and update, the ids workflows are started under, and the lease ids of batches. Clients (cli, api, activities,
 * workers) import workflow code from here only (and search-attributes.ts); they start a workflow by its type name
 * with its function's type (`start<typeof envRun>('envRun', ...)`, `import type`), never by value.
 * `.dependency-cruiser.cjs` (`workflow-internals`) checks both. Payloads and answers are typed from `src/schema`.
 *
 * The name strings are in recorded histories and running workflows: changing one breaks replay and live runs.
 */

/**
 * The workflow task timeout of the workflows Clotho starts (env-runs, rollout groups, batchers). When a worker dies,
 * the task it had started is handed to another only when this passes, so it is what a crash costs a workflow: a
 * rollout group's turns run in local activities that hold its task (the default placement), and the SDK renews a task
 * held that long every 80 % of it (three history events). Temporal's default is 10 s; at 5 s a restarted process takes
 * the work over about as soon as it is up (issue 25).
 */
export const WORKFLOW_TASK_TIMEOUT_MS = 5000;

// The batcher (batcher.ts, batcher-room.ts): Atropos's queue for one training run.

/** Groups from an env-run; durable once sent, and the batcher's idempotency keys ignore a repeat. */
export const ingestGroupsSignal = defineSignal<[GroupRef[]]>('ingestGroups');
/** Groups from the HTTP API, answered per group (Atropos's status); unknown env ids are refused. */
export const ingestGroupsUpdate = defineUpdate<BatcherIngestResult[], [GroupRef[]]>('ingestGroups');
/** Groups an env-run dropped before delivery, counted in the batcher's metrics. */
export const recordDropsSignal = defineSignal<[RecordDrops]>('recordDrops');
/** An env-run asks to be pushed its env's room now and whenever it changes (`roomChangedSignal`). */
export const watchRoomSignal = defineSignal<[WatchRoom]>('watchRoom');
/** The batcher pushes an env's room to the env-runs watching it (sent to the env-run). */
export const roomChangedSignal = defineSignal<[BatcherRoom]>('roomChanged');
/** Why the batcher an env-run feeds was ended (a new training run superseded it). */
export interface BatcherEnded {
  batcherId: string;
  reason: string;
}
/** Sent to an env-run whose batcher was ended: it fails, naming the batcher and why, rather than wait for room. */
export const batcherEndedSignal = defineSignal<[BatcherEnded]>('batcherEnded');
/** Why a batcher is asked to end: the batcher of the training run that supersedes it, and in words. */
export interface BatcherSuperseded {
  by: string;
  reason: string;
}
/**
 * Sent by a new training run's batcher, as its first act, to the batcher it supersedes: that one tells its watchers
 * (`batcherEndedSignal`) and ends. Carried by the workflows themselves, so no crash of the process that started the new
 * run can leave the old one running.
 */
export const supersedeBatcherSignal = defineSignal<[BatcherSuperseded]>('supersedeBatcher');
export const registerTrainerUpdate = defineUpdate<RegisterTrainerResult, [TrainerRegistration]>('registerTrainer');
export const registerEnvUpdate = defineUpdate<RegisterEnvResponse, [EnvRegistration]>('registerEnv');
export const disconnectEnvUpdate = defineUpdate<DisconnectEnvResponse, [number]>('disconnectEnv');
export const takeBatchUpdate = defineUpdate<TakeResult, [TakeBatchRequest]>('takeBatch');
/** Acks a leased batch by the lease id it was served with ({@link leaseIdOf}); only the live lease can. */
export const ackBatchUpdate = defineUpdate<AckStatus, [string]>('ackBatch');
/** Holds leases longer, each by the lease id it was served with; only live leases can be renewed. */
export const renewLeasesUpdate = defineUpdate<LeaseRenewal[], [RenewLeasesRequest]>('renewLeases');
/** `/reset_data`: answers how many groups were dropped. */
export const resetUpdate = defineUpdate<number, []>('reset');
export const batcherViewQuery = defineQuery<BatcherView>('batcherView');
export const statusEnvQuery = defineQuery<StatusEnv | null, [number]>('statusEnv');
/** The groups of a formed or leased batch, by id (trainer workers fetch batch data with it). */
export const batchQuery = defineQuery<GroupRef[] | null, [string]>('batch');
/** A page of the groups waiting for a trainer, read without taking them (`GET /queue`, `clotho view --api`). */
export const waitingGroupsQuery = defineQuery<WaitingGroupsPage, [WaitingGroupsRequest]>('waitingGroups');

/**
 * The id of a batch's `delivery`-th serving under a lease: deterministic (workflow code draws no random ids) and
 * different for every serving, so that only the trainer holding the batch now can ack it. The first serving keeps
 * the batch's own id: a trainer that leased a batch before leases had ids of their own acks it as before.
 */
export function leaseIdOf(batchId: string, delivery: number): string {
  return delivery <= 1 ? batchId : `${batchId}.lease-${delivery}`;
}

/** The batch a lease id names, and which serving of it; an id that {@link leaseIdOf} never makes is a batch id. */
export function parseLeaseId(leaseId: string): { batchId: string; delivery: number } {
  const match = /^(.+)\.lease-(\d+)$/.exec(leaseId);
  const parsed = match ? { batchId: match[1] as string, delivery: Number(match[2]) } : null;
  return parsed && leaseIdOf(parsed.batchId, parsed.delivery) === leaseId ? parsed : { batchId: leaseId, delivery: 1 };
}

// The env-run (env-run.ts) and its children.

/** How far an env-run is. */
export const envRunStatusQuery = defineQuery<EnvRunStatus>('envRunStatus');

/** Workflow id of item i's rollout group: starting the same item twice is refused by Temporal. */
export function rolloutGroupId(runId: string, environment: string, itemIndex: number): string {
  return `clotho/${runId}/${environment}/item-${itemIndex}`;
}

/** Workflow id of the evaluation at a trainer step: one per step, found beside the run's rollout groups. */
export function evaluationId(runId: string, environment: string, step: number): string {
  return `clotho/${runId}/${environment}/eval-${step}`;
}

/** The innermost cause of a workflow's or child's failure: what went wrong, not the wrapping "workflow failed". */
export function causeOf(error: unknown): string {
  let current = error as { message?: string; cause?: unknown } | undefined;
  while (current?.cause) current = current.cause as typeof current;
  return current?.message ?? String(error);
}
