import { z } from 'zod';
import { InfoSchema, StatusSchema, TrainerRegistrationSchema, WandbInfoSchema } from './api.js';
import { DROP_REASONS } from './rollout.js';

/**
 * What the batcher workflow's messages carry (`src/workflows/messages.ts`): its signals', updates' and queries'
 * arguments and answers. Atropos's own bodies (registration, `/status-env`, ...) are in `api.ts`; these are
 * Clotho's, between the batcher and its clients (`clotho api`, env-runs, `clotho serve`, trainer workers).
 */

const int = z.number().int();

/** A scored group in the batcher: a reference into the trajectory store, never its tokens. */
export const GroupRefSchema = z.object({
  /** Idempotency key, or an id the caller generated. */
  id: z.string(),
  /** Trajectory store key of the full group. */
  ref: z.string(),
  envId: int.nullable(),
  /** Sequences in the group (`len(tokens)`). */
  size: int,
  /** Trainer step of the policy that generated the group, when known. */
  policyVersion: int.nullable().optional(),
  /** Tokens of the group's longest sequence, when known: one at or above the trainer's max_token_len is dropped. */
  longestSequence: int.optional(),
  receivedAt: z.number().optional(),
});
export type GroupRef = z.infer<typeof GroupRefSchema>;

/**
 * Reasons of an Atropos env-run's groups with no reason of Clotho's own: `collect_trajectories` returned None
 * (`declined`), or Atropos's send filter kept the group back for another reason (`filtered`; the env-run's progress
 * keeps Atropos's own words).
 */
export const ATROPOS_DROP_REASONS = ['declined', 'filtered'] as const;

/**
 * Why a group was not trained on: too old, reset away, with no sequences, too long for the trainer, refused by
 * a trainer worker (`dropBatch`), or dropped by the env-run that produced it (reported with `recordDrops`).
 */
export const BatcherDropReasonSchema = z.enum(['stale', 'reset', 'empty', 'trainer_failed', ...DROP_REASONS, ...ATROPOS_DROP_REASONS]);
export type BatcherDropReason = z.infer<typeof BatcherDropReasonSchema>;

/** The `recordDrops` signal: groups an env-run dropped before delivery, counted in the batcher's metrics. */
export const RecordDropsSchema = z.object({
  envId: int,
  dropped: z.partialRecord(z.enum([...DROP_REASONS, ...ATROPOS_DROP_REASONS]), int),
});
export type RecordDrops = z.infer<typeof RecordDropsSchema>;

/** The `watchRoom` signal: an env-run asks to be pushed its env's room (`roomChanged`) now and on every change. */
export const WatchRoomSchema = z.object({ workflowId: z.string(), envId: int });
export type WatchRoom = z.infer<typeof WatchRoomSchema>;

/** What a `POST /scored_data` answers (Atropos's two answers; the API adds Clotho's, `IngestResult`). */
export const ScoredDataResponseSchema = z.union([
  z.object({ status: z.literal('received') }),
  z.object({ status: z.literal('buffered'), buffer_size: int }),
]);
export type ScoredDataResponse = z.infer<typeof ScoredDataResponseSchema>;

/** What became of one posted group. */
export const IngestOutcomeSchema = z.enum(['queued', 'oversize', 'buffered', 'duplicate', 'stale', 'empty', 'too_long']);
export type IngestOutcome = z.infer<typeof IngestOutcomeSchema>;

/** The batcher's answer for one group of an `ingestGroups` update. */
export const BatcherIngestResultSchema = z.object({
  response: ScoredDataResponseSchema,
  outcome: IngestOutcomeSchema,
  /** Groups the buffer released into the queue because of this one. */
  released: int,
  /**
   * Groups waiting in the batcher once the whole `ingestGroups` call was taken in: the API bounds its ingest by
   * it without a query per post.
   */
  waiting: int.optional(),
});
export type BatcherIngestResult = z.infer<typeof BatcherIngestResultSchema>;

/** The `registerTrainer` update's answer: whether this registration set the trainer's settings (the first does). */
export const RegisterTrainerResultSchema = z.object({ initialised: z.boolean() });
export type RegisterTrainerResult = z.infer<typeof RegisterTrainerResultSchema>;

/** The `takeBatch` update's argument: lease the batch for this long (`GET /batch?lease_seconds=`), or not at all. */
export const TakeBatchRequestSchema = z.object({ leaseMs: z.number().positive().optional() });
export type TakeBatchRequest = z.infer<typeof TakeBatchRequestSchema>;

/** The `takeBatch` update's answer (`GET /batch`). */
export const TakeResultSchema = z.union([
  z.object({ status: z.literal('not_registered') }),
  z.object({ status: z.literal('empty') }),
  z.object({
    status: z.literal('batch'),
    batchId: z.string(),
    /** The id the trainer acks this serving with (a lease id); null without a lease. */
    leaseId: z.string().nullable(),
    step: int,
    groups: z.array(GroupRefSchema),
    leaseExpiresAt: z.number().nullable(),
  }),
]);
export type TakeResult = z.infer<typeof TakeResultSchema>;

/**
 * The `ackBatch` update's answer: the live lease it names (`acked`: the batch is never served again), a lease that
 * ran out or was superseded by a later serving of the same batch (`expired`), or nothing (`unknown`).
 */
export const AckStatusSchema = z.enum(['acked', 'expired', 'unknown']);
export type AckStatus = z.infer<typeof AckStatusSchema>;

/**
 * The `renewLeases` update's argument (`POST /batch/renew`): hold each of these leases for `durationMs` more from now.
 * A trainer renews the leases of every batch it trained but has not acked yet, so that acking only at a checkpoint
 * never lets a lease run out.
 */
export const RenewLeasesRequestSchema = z.object({ leaseIds: z.array(z.string().min(1)).min(1), durationMs: z.number().positive() });
export type RenewLeasesRequest = z.infer<typeof RenewLeasesRequestSchema>;

/**
 * What became of one lease of a `renewLeases` update: held until `leaseExpiresAt` (`renewed`), run out or superseded by
 * a later serving of its batch before the renewal (`expired`: the batch is, or will be, served again), or not known.
 */
export const LeaseRenewalSchema = z.object({
  leaseId: z.string(),
  status: z.enum(['renewed', 'expired', 'unknown']),
  leaseExpiresAt: z.number().nullable(),
});
export type LeaseRenewal = z.infer<typeof LeaseRenewalSchema>;

/** The `waitingGroups` query's argument. */
export const WaitingGroupsRequestSchema = z.object({ offset: int, limit: int });
export type WaitingGroupsRequest = z.infer<typeof WaitingGroupsRequestSchema>;

/** The `waitingGroups` query's answer: a page of the groups waiting for a trainer (`GET /queue`). */
export const WaitingGroupsPageSchema = z.object({
  /** All groups waiting now, not only this page's. */
  total: int,
  groups: z.array(GroupRefSchema),
});
export type WaitingGroupsPage = z.infer<typeof WaitingGroupsPageSchema>;

/** Monotonic counters of one environment (`none` for groups without an env id). */
export const EnvCountersSchema = z.object({
  /** New groups accepted (duplicates excluded). */
  received: int,
  /** Went straight to the queue (oversize groups included). */
  queued: int,
  /** Larger than the declared group size, queued whole. */
  oversize: int,
  buffered: int,
  /** Moved from the buffer to the queue. */
  released: int,
  duplicates: int,
  dropped: z.partialRecord(BatcherDropReasonSchema, int),
  /** Groups handed to a trainer, redeliveries included. */
  served: int,
});
export type EnvCounters = z.infer<typeof EnvCountersSchema>;

export const BatcherCountersSchema = z.object({
  batchesFormed: int,
  batchesServed: int,
  batchesRedelivered: int,
  batchesAcked: int,
  /**
   * Batches a trainer has taken for good: served without a lease, or acked. What says a trainer has trained on this
   * run (the step counts batches formed). Absent in batchers from before it was counted.
   */
  batchesTaken: int.optional(),
  leasesExpired: int,
  /** Leases renewed (`renewLeases`); absent in batchers from before renewals. */
  leasesRenewed: int.optional(),
  /**
   * Batchers this one was started to supersede that it could not tell to end (closed already, or never there): their
   * env-runs were not told. Absent until one happens.
   */
  supersessionErrors: int.optional(),
  perEnv: z.record(z.string(), EnvCountersSchema),
});
export type BatcherCounters = z.infer<typeof BatcherCountersSchema>;

/** Gauges and counters for metrics: what waits where now, and what happened so far. */
export const BatcherMetricsSchema = z.object({
  step: int,
  /** Groups waiting for a trainer: in formed batches not served yet, in the queue and in the buffers. */
  waitingGroups: int,
  queueGroups: int,
  queueSequences: int,
  bufferedGroups: int,
  formedBatches: int,
  leasedBatches: int,
  /** Per env key: groups in the queue and in the buffer now. */
  waiting: z.record(z.string(), z.object({ queued: int, buffered: int })),
  counters: BatcherCountersSchema,
});
export type BatcherMetrics = z.infer<typeof BatcherMetricsSchema>;

/**
 * How formed batches reach the trainer: pulled over HTTP (`GET /batch`), or pushed as `trainStep` activities
 * whose trainer heartbeats (a dead trainer's batch goes to another within `heartbeatTimeoutMs`, default 20 s).
 */
export const TrainerModeSchema = z.union([
  z.object({ kind: z.literal('http') }),
  z.object({ kind: z.literal('temporal'), taskQueue: z.string(), heartbeatTimeoutMs: z.number().optional() }),
]);
export type TrainerMode = z.infer<typeof TrainerModeSchema>;

/** The `batcherView` query's answer: what a reading of the batcher shows (the API's GET endpoints). */
export const BatcherViewSchema = z.object({
  registered: z.boolean(),
  info: InfoSchema,
  wandb: WandbInfoSchema,
  status: StatusSchema,
  latest: GroupRefSchema.nullable(),
  metrics: BatcherMetricsSchema,
  envs: z.array(z.object({ envId: int, name: z.string(), connected: z.boolean() })),
  /** The registered trainer's settings (`starting_step` is the batcher's step now); null before `/register`. */
  trainer: TrainerRegistrationSchema.nullable(),
  /** How batches reach the trainer: `GET /batch` (http) or trainStep activities (temporal). */
  trainerMode: z.enum(['http', 'temporal']),
});
export type BatcherView = z.infer<typeof BatcherViewSchema>;
