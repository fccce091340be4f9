import type {
  DisconnectEnvResponse,
  EnvRegistration,
  Info,
  IngestResult,
  MetricsSnapshot,
  RegisterEnvResponse,
  Status,
  StatusEnv,
  TrainerRegistration,
  WandbInfo,
} from '../schema/api.js';
import type { AckStatus } from '../schema/batcher.js';
import type { BatchRenewResponse } from '../schema/api.js';
import type { ScoredDataGroup } from '../schema/scored-data.js';

/** One posted group with Clotho's optional additions taken out of the wire body. */
export interface IngestGroup {
  /** The group exactly as Atropos stores it (14 keys). */
  group: ScoredDataGroup;
  /** A key seen before makes the group a duplicate: acknowledged, not queued again. */
  idempotencyKey?: string;
  /** The policy (trainer step) that generated the group. */
  policyVersion?: number;
  /**
   * The group's JSON as posted, when it reads back as `group` (`keepsAsPosted`): a durable service may store these
   * bytes rather than serialise `group` again.
   */
  raw?: Uint8Array;
}

/** What `GET /batch` found. */
export type TakeBatchResult =
  | { status: 'not_registered' }
  | { status: 'empty' }
  /** Batches go to trainer workers on a task queue (`clotho api --trainer temporal`), not to `GET /batch`. */
  | { status: 'trainer_queue' }
  | {
      status: 'batch';
      /** The id to ack the batch with: a leased batch's is the lease's own, new each time the batch is served. */
      batchId: string;
      batch: ScoredDataGroup[];
      /** Seconds since the Unix epoch when an unacked lease returns the batch to the queue; null without a lease. */
      leaseExpiresAt: number | null;
    };

/** A group waiting for the trainer (`GET /queue`), with the batcher's facts about it. */
export interface WaitingGroup {
  /** The group's idempotency key, or the id the API gave it. */
  id: string;
  envId: number | null;
  /** The trainer step of the policy that generated it, when the poster said. */
  policyVersion: number | null;
  /** Seconds since the Unix epoch when the API took it in; null when not recorded. */
  receivedAt: number | null;
  group: ScoredDataGroup;
}

/** A page of {@link WaitingGroup}s; `total` counts every group waiting, not only this page's. */
export interface WaitingGroupsResult {
  total: number;
  groups: WaitingGroup[];
}

/**
 * Thrown by {@link TrajectoryService} when a request names an `env_id` that was never registered
 * (or was forgotten by a reset); the API answers 422.
 */
export class UnknownEnvError extends Error {
  constructor(readonly envIds: number[]) {
    super(`unknown env_id ${envIds.join(', ')}: register the environment with /register-env first`);
    this.name = 'UnknownEnvError';
  }
}

/** Why `clotho api --trainer temporal` serves no HTTP trainer: `/batch` and `/register` answer with it. */
export const TEMPORAL_TRAINER_MODE =
  'clotho api is in Temporal-trainer mode (--trainer temporal): every batch goes to a trainStep activity on the ' +
  'trainer task queue, never to GET /batch, so HTTP trainers cannot train here; start clotho api with --trainer http ' +
  '(the default) for them, or register the Temporal trainer with POST /register?trainer=temporal';

/** Thrown by {@link TrajectoryService.register} for an HTTP trainer while batches go to trainer workers. */
export class TrainerModeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TrainerModeError';
  }
}

/**
 * Thrown by {@link TrajectoryService.register} when a registration could be the current training run resuming or a
 * new one (`run-identity.ts`); the message names both configurations and how to start a new run.
 */
export class RegistrationConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegistrationConflictError';
  }
}

/** What a `POST /register` did, when the service can tell: the training run it serves now, and how it got there. */
export interface RegisterOutcome {
  outcome: 'initialised' | 'resumed' | 'new_run';
  /** Workflow id of the batcher run serving the trainer. */
  batcherId: string;
}

/** Options of {@link TrajectoryService.register}: `POST /register`'s query. */
export interface RegisterOptions {
  /**
   * `true`: start a new training run whatever the registration says (`?new_run=true`); `false`: never, join the run
   * served now, whose settings stand (`?new_run=false`, what `sft-gen` sends); absent: the registration decides.
   */
  newRun?: boolean;
  /** Who registers: an HTTP trainer (`GET /batch`, the default) or the Temporal trainer of `--trainer temporal`. */
  trainer?: 'http' | 'temporal';
}

/**
 * Thrown by {@link TrajectoryService.ingestGroups} when the groups waiting for the trainer reached the API's bound
 * (`clotho api --max-queue-groups`); the API answers 503 with `Retry-After`, which environments retry.
 */
export class QueueFullError extends Error {
  constructor(
    readonly waiting: number,
    readonly maxGroups: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`${waiting} groups wait for the trainer, the bound is ${maxGroups} (--max-queue-groups): retry later`);
    this.name = 'QueueFullError';
  }
}

/**
 * Everything the HTTP API asks of the batcher. The API process holds no state of its own: an
 * implementation forwards each call to the batcher workflow and the trajectory store. Payloads the
 * wire returns unchanged use the wire's field names; the rest the API shapes itself.
 */
export interface TrajectoryService {
  /**
   * A trainer registers; `requester` is the uuid (as decimal digits) the API hands back to it. Throws
   * {@link RegistrationConflictError} or {@link TrainerModeError} when it is refused.
   */
  register(registration: TrainerRegistration, requester: string, options?: RegisterOptions): Promise<RegisterOutcome | void>;
  registerEnv(env: EnvRegistration): Promise<RegisterEnvResponse>;
  disconnectEnv(envId: number): Promise<DisconnectEnvResponse>;
  wandbInfo(): Promise<WandbInfo>;
  info(): Promise<Info>;
  /** Forms or hands out the next batch; with `leaseSeconds`, the batch must be acked within that time. */
  takeBatch(options: { leaseSeconds?: number }): Promise<TakeBatchResult>;
  /** `POST /batch/ack`: `expired` means the lease ran out, or the batch was served again under another, before the ack. */
  ackBatch(batchId: string): Promise<AckStatus>;
  /**
   * `POST /batch/renew`: holds each lease `leaseSeconds` more from now, answering per lease in order (its new end in
   * seconds since the Unix epoch); `expired` as for an ack. An empty list renews nothing.
   */
  renewLeases(batchIds: string[], leaseSeconds: number): Promise<BatchRenewResponse['leases']>;
  /** A batch already formed, by id, for trainer workers; null when unknown. */
  getBatchById(batchId: string): Promise<ScoredDataGroup[] | null>;
  /**
   * The groups waiting for the trainer (queued, buffered, or in formed batches not yet served; not leased ones),
   * `limit` of them from `offset`, read without taking anything.
   */
  waitingGroups(page: { offset: number; limit: number }): Promise<WaitingGroupsResult>;
  /** The last group queued, or null if none ever was. */
  latestExample(): Promise<ScoredDataGroup | null>;
  /**
   * Ingests groups in order, one result per group. Ingests nothing and throws {@link UnknownEnvError} when any
   * group names an unregistered `env_id`, or {@link QueueFullError} when the queue is full.
   */
  ingestGroups(groups: IngestGroup[]): Promise<IngestResult[]>;
  status(): Promise<Status>;
  /** Backpressure figures for one environment; throws {@link UnknownEnvError} for an unknown id. */
  statusEnv(envId: number): Promise<StatusEnv>;
  /** Forgets the trainer, environments, queue and buffers (`GET /reset_data`). */
  reset(): Promise<void>;
  metrics(): Promise<MetricsSnapshot>;
}
