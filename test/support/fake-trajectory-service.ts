import type { EnvRegistration, IngestResult, MetricsSnapshot, TrainerRegistration } from '../../src/schema/api.js';
import type { AckStatus } from '../../src/schema/batcher.js';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import {
  QueueFullError,
  UnknownEnvError,
  type IngestGroup,
  type RegisterOptions,
  type RegisterOutcome,
  type TakeBatchResult,
  type TrajectoryService,
  type WaitingGroup,
  type WaitingGroupsResult,
} from '../../src/api/service.js';

interface EnvRecord extends EnvRegistration {
  name: string;
  connected: boolean;
  received: number;
  buffered: number;
}

const sequences = (groups: ScoredDataGroup[]) => groups.reduce((n, g) => n + g.tokens.length, 0);

/**
 * An in-memory {@link TrajectoryService} for the API's unit tests, and the in-memory baseline of bench/api: Atropos's bookkeeping without
 * its packing rules (a batch is the oldest groups reaching `batch_size` sequences) and without
 * releasing buffered groups. Groups whose `policyVersion` is below `minPolicyVersion` are dropped as stale.
 */
export class FakeTrajectoryService implements TrajectoryService {
  registration: TrainerRegistration | null = null;
  requesters: string[] = [];
  envs: EnvRecord[] = [];
  queue: ScoredDataGroup[] = [];
  buffers = new Map<number, ScoredDataGroup[]>();
  minPolicyVersion = 0;
  /** Queued groups past which posts are refused as `clotho api --max-queue-groups` refuses them. */
  maxQueueGroups = Number.POSITIVE_INFINITY;
  /** Seconds since the Unix epoch; tests move it to expire leases. */
  now = 1_700_000_000;
  private started = false;
  private step = 0;
  private latest: ScoredDataGroup | null = null;
  private keys = new Set<string>();
  private batches = new Map<string, ScoredDataGroup[]>();
  private leases = new Map<string, number>();
  private counters = { received: 0, buffered: 0, formed: 0, served: 0, stale: 0, postsRefused: 0, groupsRefused: 0, renewed: 0 };
  /** What the batcher would know of each group taken in: its id, policy version and arrival. */
  private facts = new WeakMap<ScoredDataGroup, Omit<WaitingGroup, 'group'>>();

  async register(registration: TrainerRegistration, requester: string, _options?: RegisterOptions): Promise<RegisterOutcome | void> {
    this.registration ??= registration;
    this.step = this.step || registration.starting_step;
    this.requesters.push(requester);
  }

  async registerEnv(env: EnvRegistration) {
    if (!this.started || !this.registration) return { status: 'wait for trainer to start' as const };
    const name = `${env.desired_name}_${this.envs.filter((e) => e.desired_name === env.desired_name).length}`;
    this.envs.push({ ...env, name, connected: true, received: 0, buffered: 0 });
    const r = this.registration;
    return {
      status: 'success' as const,
      env_id: this.envs.length - 1,
      wandb_name: name,
      checkpoint_dir: r.checkpoint_dir,
      starting_step: this.step,
      checkpoint_interval: r.save_checkpoint_interval,
      num_steps: r.num_steps,
    };
  }

  async disconnectEnv(envId: number) {
    const env = this.envs[envId];
    if (!env) return { status: 'failure' as const, error: `list index out of range: ${envId}` };
    env.connected = false;
    return { status: 'success' as const };
  }

  async wandbInfo() {
    return { group: this.registration?.wandb_group ?? null, project: this.registration?.wandb_project ?? null };
  }

  async info() {
    return { batch_size: this.registration?.batch_size ?? -1, max_token_len: this.registration?.max_token_len ?? -1 };
  }

  async takeBatch({ leaseSeconds }: { leaseSeconds?: number }): Promise<TakeBatchResult> {
    if (!this.registration) return { status: 'not_registered' };
    this.started = true;
    if (sequences(this.queue) < this.registration.batch_size) return { status: 'empty' };
    const batch: ScoredDataGroup[] = [];
    while (sequences(batch) < this.registration.batch_size) batch.push(this.queue.shift()!);
    this.step += 1;
    this.counters.formed += 1;
    this.counters.served += 1;
    const batchId = `batch-${this.counters.formed}`;
    this.batches.set(batchId, batch);
    const leaseExpiresAt = leaseSeconds === undefined ? null : this.now + leaseSeconds;
    if (leaseExpiresAt !== null) this.leases.set(batchId, leaseExpiresAt);
    return { status: 'batch', batchId, batch, leaseExpiresAt };
  }

  async ackBatch(batchId: string): Promise<AckStatus> {
    const expires = this.leases.get(batchId);
    if (expires === undefined) return 'unknown';
    this.leases.delete(batchId);
    return this.now > expires ? 'expired' : 'acked';
  }

  async renewLeases(batchIds: string[], leaseSeconds: number) {
    return batchIds.map((batchId) => {
      const expires = this.leases.get(batchId);
      if (expires === undefined) return { batch_id: batchId, status: 'unknown' as const, lease_expires_at: null };
      if (this.now > expires) return { batch_id: batchId, status: 'expired' as const, lease_expires_at: null };
      this.leases.set(batchId, Math.max(expires, this.now + leaseSeconds));
      this.counters.renewed += 1;
      return { batch_id: batchId, status: 'renewed' as const, lease_expires_at: this.leases.get(batchId)! };
    });
  }

  async getBatchById(batchId: string) {
    return this.batches.get(batchId) ?? null;
  }

  async waitingGroups({ offset, limit }: { offset: number; limit: number }): Promise<WaitingGroupsResult> {
    // The queue, then the buffers: what a batch could still be made of (a taken batch is gone, leased or not).
    const all = [...this.queue, ...[...this.buffers.values()].flat()];
    const groups = all.slice(offset, offset + limit).map((group) => ({ ...this.facts.get(group)!, group }));
    return { total: all.length, groups };
  }

  async latestExample() {
    return this.latest;
  }

  async ingestGroups(groups: IngestGroup[]): Promise<IngestResult[]> {
    const unknown = groups.map((g) => g.group.env_id).filter((id): id is number => id !== null && !this.envs[id]);
    if (unknown.length > 0) throw new UnknownEnvError([...new Set(unknown)]);
    if (this.queue.length >= this.maxQueueGroups) {
      this.counters.postsRefused += 1;
      this.counters.groupsRefused += groups.length;
      throw new QueueFullError(this.queue.length, this.maxQueueGroups, 1);
    }
    return groups.map(({ group, idempotencyKey, policyVersion }) => {
      if (idempotencyKey !== undefined && this.keys.has(idempotencyKey)) return { status: 'received', duplicate: true };
      if (idempotencyKey !== undefined) this.keys.add(idempotencyKey);
      this.counters.received += 1;
      const id = idempotencyKey ?? `fake-${this.counters.received}`;
      this.facts.set(group, { id, envId: group.env_id, policyVersion: policyVersion ?? null, receivedAt: this.now });
      if (policyVersion !== undefined && policyVersion < this.minPolicyVersion) {
        this.counters.stale += 1;
        return { status: 'dropped', reason: 'stale' };
      }
      const env = group.env_id === null ? undefined : this.envs[group.env_id];
      if (env) env.received += 1;
      if (env && group.env_id !== null && group.tokens.length !== env.group_size) {
        const buffer = [...(this.buffers.get(group.env_id) ?? []), group];
        this.buffers.set(group.env_id, buffer);
        env.buffered += 1;
        this.counters.buffered += 1;
        return { status: 'buffered', buffer_size: sequences(buffer) };
      }
      this.queue.push(group);
      this.latest = group;
      return { status: 'received' };
    });
  }

  async status() {
    return { current_step: this.registration ? this.step : 0, queue_size: this.registration ? this.queue.length : 0 };
  }

  async statusEnv(envId: number) {
    const env = this.envs[envId];
    if (!env) throw new UnknownEnvError([envId]);
    const own = sequences(this.queue.filter((g) => g.env_id === envId));
    return {
      current_step: this.step,
      queue_size: Math.floor(own / env.group_size),
      unallocated_fraction: 1,
      self_queue_size: Math.floor(own / env.group_size),
      max_group_size: Math.max(1, ...this.queue.map((g) => g.tokens.length)),
      env_weight: 1,
    };
  }

  async reset() {
    Object.assign(this, { registration: null, requesters: [], envs: [], queue: [], started: false, step: 0 });
    this.buffers.clear();
  }

  async metrics(): Promise<MetricsSnapshot> {
    const c = this.counters;
    return {
      currentStep: this.step,
      groupsReceived: c.received,
      groupsBuffered: c.buffered,
      groupsDropped: c.stale > 0 ? { stale: c.stale } : {},
      batchesFormed: c.formed,
      batchesServed: c.served,
      queueDepth: this.queue.length,
      postsRefused: c.postsRefused,
      groupsRefused: c.groupsRefused,
      leasesExpired: 0,
      leasesRenewed: c.renewed,
      supersessionErrors: 0,
      envs: this.envs.map((e, envId) => ({
        env: e.name,
        envId,
        groupsReceived: e.received,
        groupsBuffered: e.buffered,
        groupsDropped: {},
        queueDepth: this.queue.filter((g) => g.env_id === envId).length,
      })),
    };
  }
}

/** A valid wire group of `size` sequences of `length` tokens, as an Atropos env would post it. */
export function sampleGroup(size = 2, length = 3, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const rows = <T>(f: (i: number, j: number) => T) => Array.from({ length: size }, (_, i) => Array.from({ length }, (_, j) => f(i, j)));
  return {
    tokens: rows((i, j) => 100 + i * length + j),
    masks: rows((i, j) => (j === 0 ? -100 : 100 + i * length + j)),
    scores: Array.from({ length: size }, (_, i) => (i % 2 === 0 ? 1 : 0)),
    inference_logprobs: rows((_, j) => (j === 0 ? 1 : -0.5)),
    ...extra,
  };
}
