import { createHash, randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { IngestResult, MetricsSnapshot } from '../schema/api.js';
import type { ScoredDataGroup } from '../schema/scored-data.js';
import { storeKey, type TrajectoryStore } from '../store/trajectory-store.js';
import type { BatcherIngestResult, BatcherView, GroupRef } from '../schema/batcher.js';
import {
  ackBatchUpdate,
  batchQuery,
  batcherViewQuery,
  disconnectEnvUpdate,
  ingestGroupsUpdate,
  parseLeaseId,
  registerEnvUpdate,
  registerTrainerUpdate,
  renewLeasesUpdate,
  resetUpdate,
  statusEnvQuery,
  takeBatchUpdate,
  waitingGroupsQuery,
} from '../workflows/messages.js';
import type { batcher } from '../workflows/batcher.js';
import { acceptedKeys } from './accepted-keys.js';
import { coalesced } from './coalesce.js';
import { DEFAULT_MAX_QUEUE_GROUPS, QueueBound, type Refusals } from './queue-bound.js';
import { conflictMessage, decideRegistration, type RegistrationDecision } from './run-identity.js';
import {
  RegistrationConflictError,
  TEMPORAL_TRAINER_MODE,
  TrainerModeError,
  UnknownEnvError,
  type IngestGroup,
  type TrajectoryService,
} from './service.js';
import { groupBlob, storedGroup } from './stored-group.js';

export interface TemporalServiceOptions {
  client: Client;
  store: TrajectoryStore;
  /** Workflow id of the batcher this API fronts (the current training run's). */
  batcherId: string;
  /**
   * Starts a fresh batcher run after the current one (ended) and returns its workflow id; a `/register` that means a
   * new training run ({@link decideRegistration}) calls it. Without it such a registration is refused.
   */
  startNewRun?: (why: string) => Promise<string>;
  /** Groups waiting in the batcher and in this process past which posts are refused (503). @default DEFAULT_MAX_QUEUE_GROUPS */
  maxQueueGroups?: number;
  /**
   * Called with the store refs of groups the trainer has for good (their batch acked, or served without a lease) and
   * of posted groups the batcher refused, before the request is answered (`--retention ack` deletes their blobs).
   * It must not throw: the ack has happened whatever becomes of the blobs.
   */
  onDelivered?: (refs: string[]) => Promise<void>;
}

/**
 * The trajectory API's service backed by the batcher workflow: every call is an update or a query on it,
 * group data goes through the trajectory store. Nothing lives in this process but requests in flight.
 */
export function createTemporalTrajectoryService({
  client,
  store,
  batcherId: firstBatcherId,
  startNewRun,
  maxQueueGroups = DEFAULT_MAX_QUEUE_GROUPS,
  onDelivered,
}: TemporalServiceOptions): TrajectoryService {
  // The current training run's batcher: a /register that means a new run moves it on.
  let batcherId = firstBatcherId;
  const handle = (): WorkflowHandle<typeof batcher> => client.workflow.getHandle(batcherId);
  const view = () => handle().query(batcherViewQuery);
  const bound = new QueueBound(maxQueueGroups, async () => (await view()).metrics.waitingGroups);
  let accepted = acceptedKeys(store, batcherId);
  const withEnvId = (ref: GroupRef, stored: ScoredDataGroup) => {
    const group = storedGroup(stored);
    return ref.envId !== null && group.env_id === null ? { ...group, env_id: ref.envId } : group;
  };
  const readGroups = (refs: GroupRef[]) => Promise.all(refs.map(async (ref) => withEnvId(ref, await store.get<ScoredDataGroup>(ref.ref))));
  const ingest = coalesced(async (refs: GroupRef[]) => {
    const results = await handle().executeUpdate(ingestGroupsUpdate, { args: [refs] });
    const waiting = results.at(-1)?.waiting;
    if (waiting !== undefined) bound.report(waiting);
    return results;
  }, INGEST_COALESCING);
  // Env ids seen registered: they only disappear with a reset, which the batcher's validator catches anyway.
  const knownEnvs = new Set<number>();
  const unknownEnvs = async (ids: number[]) => {
    if (ids.every((id) => knownEnvs.has(id))) return [];
    for (const env of (await view()).envs) knownEnvs.add(env.envId);
    return ids.filter((id) => !knownEnvs.has(id));
  };

  /** Moves this API onto a fresh batcher run; what it knew of the old one's envs and keys stays behind. */
  const moveToNewRun = async (why: string) => {
    if (!startNewRun) throw new RegistrationConflictError(`a new training run is needed (${why}), and this API cannot start one`);
    batcherId = await startNewRun(why);
    accepted = acceptedKeys(store, batcherId);
    knownEnvs.clear();
  };

  return {
    async register(registration, _requester, { newRun, trainer = 'http' } = {}) {
      const current = await view();
      if (current.trainerMode === 'temporal' && trainer !== 'temporal') throw new TrainerModeError(TEMPORAL_TRAINER_MODE);
      // A batcher from before batches taken were counted decides by its step, as it did then.
      const taken = current.metrics.counters.batchesTaken ?? current.status.current_step;
      const decision: RegistrationDecision =
        newRun === true
          ? { kind: 'new_run', why: 'asked for (new_run=true)' }
          : newRun === false
            ? { kind: current.trainer ? 'resume' : 'initialise' }
            : decideRegistration(current.trainer, registration, taken);
      if (decision.kind === 'conflict') throw new RegistrationConflictError(conflictMessage(current.trainer!, registration, decision.why));
      if (decision.kind === 'new_run') await moveToNewRun(decision.why);
      await handle().executeUpdate(registerTrainerUpdate, { args: [registration] });
      return { outcome: decision.kind === 'initialise' ? 'initialised' : decision.kind === 'resume' ? 'resumed' : 'new_run', batcherId };
    },
    registerEnv: (env) => handle().executeUpdate(registerEnvUpdate, { args: [env] }),
    disconnectEnv: (envId) => handle().executeUpdate(disconnectEnvUpdate, { args: [envId] }),
    wandbInfo: async () => (await view()).wandb,
    info: async () => (await view()).info,
    status: async () => (await view()).status,

    async takeBatch({ leaseSeconds }) {
      const leaseMs = leaseSeconds === undefined ? undefined : Math.round(leaseSeconds * 1000);
      const taken = await handle()
        .executeUpdate(takeBatchUpdate, { args: [leaseMs === undefined ? {} : { leaseMs }] })
        .catch((error: unknown) => {
          if (error instanceof WorkflowUpdateFailedError && /trainer task queue/.test(String(error.cause?.message))) return null;
          throw error;
        });
      if (taken === null) return { status: 'trainer_queue' };
      if (taken.status !== 'batch') return { status: taken.status };
      const leaseExpiresAt = taken.leaseExpiresAt === null ? null : taken.leaseExpiresAt / 1000;
      const batch = await readGroups(taken.groups);
      // Without a lease a served batch is gone from the batcher (Atropos's rule): delivered.
      if (onDelivered && leaseExpiresAt === null) await onDelivered(taken.groups.map((g) => g.ref));
      return { status: 'batch', batchId: taken.leaseId ?? taken.batchId, batch, leaseExpiresAt };
    },
    async ackBatch(leaseId) {
      // The batch's groups, read while its lease still holds them (a batch's groups never change).
      const refs = onDelivered ? await handle().query(batchQuery, parseLeaseId(leaseId).batchId) : null;
      const outcome = await handle().executeUpdate(ackBatchUpdate, { args: [leaseId] });
      if (outcome === 'acked' && refs) await onDelivered!(refs.map((g) => g.ref));
      return outcome;
    },
    async renewLeases(leaseIds, leaseSeconds) {
      if (leaseIds.length === 0) return [];
      const renewed = await handle().executeUpdate(renewLeasesUpdate, {
        args: [{ leaseIds, durationMs: Math.round(leaseSeconds * 1000) }],
      });
      return renewed.map((r) => ({
        batch_id: r.leaseId,
        status: r.status,
        lease_expires_at: r.leaseExpiresAt === null ? null : r.leaseExpiresAt / 1000,
      }));
    },
    async getBatchById(id) {
      // The batcher finds batches by their own id; a lease id names its batch too.
      const refs = await handle().query(batchQuery, parseLeaseId(id).batchId);
      return refs ? readGroups(refs) : null;
    },
    async waitingGroups(page) {
      const { total, groups } = await handle().query(waitingGroupsQuery, page);
      const read = await Promise.all(
        groups.map(async (ref) => {
          // Taken since the query (and under --retention deleted): no longer waiting, so left out.
          const stored = await store.tryGet<ScoredDataGroup>(ref.ref);
          if (stored === undefined) return [];
          const { id, envId, policyVersion = null, receivedAt } = ref;
          return [
            { id, envId, policyVersion, receivedAt: receivedAt === undefined ? null : receivedAt / 1000, group: withEnvId(ref, stored) },
          ];
        }),
      );
      return { total, groups: read.flat() };
    },
    async latestExample() {
      const { latest } = await view();
      // Under --retention its blobs may be gone: then there is no example to show.
      if (!latest || (onDelivered && (await store.tryGet(latest.ref)) === undefined)) return null;
      return (await readGroups([latest]))[0]!;
    },

    async ingestGroups(groups) {
      const unknown = await unknownEnvs([...new Set(groups.flatMap((g) => (g.group.env_id === null ? [] : [g.group.env_id])))]);
      if (unknown.length > 0) throw new UnknownEnvError(unknown);
      // Keys recorded as accepted are duplicates however long ago they came; the rest go to the batcher.
      const known = await Promise.all(groups.map((g) => (g.idempotencyKey === undefined ? false : accepted.has(g.idempotencyKey))));
      const fresh = groups.filter((_, i) => !known[i]);
      const results = fresh.length > 0 ? await ingestFresh(fresh) : [];
      let next = 0;
      return known.map((duplicate) => (duplicate ? DUPLICATE : results[next++]!));
    },
    async statusEnv(envId) {
      const status = await handle().query(statusEnvQuery, envId);
      if (!status) throw new UnknownEnvError([envId]);
      return status;
    },
    async reset() {
      knownEnvs.clear();
      await handle().executeUpdate(resetUpdate, { args: [] });
    },
    metrics: async () => toMetrics(await view(), bound.refused),
  };

  /** Queues groups whose keys are not recorded as accepted, within the bound, and records their keys. */
  async function ingestFresh(groups: IngestGroup[]): Promise<IngestResult[]> {
    const release = await bound.admit(groups.length);
    const handedOver = ingest.announce(groups.length);
    try {
      const refs = await Promise.all(groups.map((g) => storeGroup(store, g)));
      const results = await ingestRefs(refs, groups, handedOver);
      // A refused group is never trained on; a duplicate's key is its first post's blob, which stays.
      const refused = refs.filter((_, i) => REFUSED.has(results[i]!.outcome));
      if (onDelivered && refused.length > 0) await onDelivered(refused.map((r) => r.ref));
      // Every key the batcher answered for (a duplicate of its window too, which repairs a record lost to a crash).
      await Promise.all(groups.flatMap((g) => (g.idempotencyKey === undefined ? [] : [accepted.record(g.idempotencyKey)])));
      return results.map(toWire);
    } finally {
      handedOver();
      release();
    }
  }

  async function ingestRefs(refs: GroupRef[], groups: IngestGroup[], handedOver: () => void): Promise<BatcherIngestResult[]> {
    try {
      const results = ingest(refs);
      handedOver();
      return await results;
    } catch (error) {
      // The batcher's validator has the last word on env ids (a reset may have raced the check above).
      if (!(error instanceof WorkflowUpdateFailedError && /unknown env_id/.test(String(error.cause?.message)))) throw error;
      knownEnvs.clear();
      const ids = groups.flatMap((g) => (g.group.env_id === null ? [] : [g.group.env_id]));
      throw new UnknownEnvError(await unknownEnvs([...new Set(ids)]));
    }
  }
}

const DUPLICATE: IngestResult = { status: 'received', duplicate: true };

/** Batcher outcomes of groups it will never serve. */
const REFUSED = new Set<BatcherIngestResult['outcome']>(['stale', 'empty', 'too_long']);

/**
 * How posts join into ingest updates. Each update costs the batcher a workflow task (a few ms of CPU in this process
 * and in Temporal's server, whatever its size), so groups go in as few as keep up with the posts: one update in flight
 * at a time, the groups posted meanwhile together in the next, and a free update waits briefly for groups still
 * being written to the store. Far below Temporal's limit of 10 updates in flight per workflow, however many
 * environments post at once.
 */
const INGEST_COALESCING = { lanes: 1, lingerMs: 2 };

/**
 * Writes a posted group to the store (as posted when it can be, `stored-group.ts`); its key derives from the
 * idempotency key when there is one.
 */
async function storeGroup(store: TrajectoryStore, posted: IngestGroup): Promise<GroupRef> {
  const id = posted.idempotencyKey ?? `api-${randomUUID()}`;
  const key = storeKey('api', createHash('sha256').update(id).digest('hex'));
  await store.put(key, groupBlob(posted));
  return {
    id,
    ref: key,
    envId: posted.group.env_id,
    size: posted.group.tokens.length,
    longestSequence: Math.max(0, ...posted.group.tokens.map((t) => t.length)),
    policyVersion: posted.policyVersion ?? null,
    receivedAt: Date.now(),
  };
}

function toWire(result: BatcherIngestResult): IngestResult {
  switch (result.outcome) {
    case 'duplicate':
      return { status: 'received', duplicate: true };
    case 'stale':
    case 'empty':
    case 'too_long':
      return { status: 'dropped', reason: result.outcome };
    default:
      return result.response;
  }
}

function toMetrics({ metrics, envs }: BatcherView, refused: Refusals): MetricsSnapshot {
  const all = Object.values(metrics.counters.perEnv);
  const dropped: Record<string, number> = {};
  for (const counters of all)
    for (const [reason, n] of Object.entries(counters.dropped)) dropped[reason] = (dropped[reason] ?? 0) + (n ?? 0);
  return {
    currentStep: metrics.step,
    groupsReceived: all.reduce((sum, c) => sum + c.received, 0),
    groupsBuffered: all.reduce((sum, c) => sum + c.buffered, 0),
    groupsDropped: dropped,
    batchesFormed: metrics.counters.batchesFormed,
    batchesServed: metrics.counters.batchesServed,
    queueDepth: metrics.queueGroups,
    postsRefused: refused.posts,
    leasesExpired: metrics.counters.leasesExpired,
    leasesRenewed: metrics.counters.leasesRenewed ?? 0,
    supersessionErrors: metrics.counters.supersessionErrors ?? 0,
    groupsRefused: refused.groups,
    envs: envs.map((env) => {
      const counters = metrics.counters.perEnv[String(env.envId)];
      return {
        env: env.name,
        envId: env.envId,
        groupsReceived: counters?.received ?? 0,
        groupsBuffered: counters?.buffered ?? 0,
        groupsDropped: Object.fromEntries(Object.entries(counters?.dropped ?? {}).map(([k, v]) => [k, v ?? 0])),
        queueDepth: metrics.waiting[String(env.envId)]?.queued ?? 0,
      };
    }),
  };
}
