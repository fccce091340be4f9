import type { DisconnectEnvResponse, EnvRegistration, Info, RegisterEnvResponse, Status, StatusEnv, WandbInfo } from '../schema/api.js';
import type { BatcherState } from './batcher-state.js';

/**
 * The batcher's environment registry and its status answers: `/status-env` (the envs' backpressure
 * signal), `/status`, `/info`, `/wandb_info` (ATROPOS-API.md §1.2, §1.3, §1.6). Pure functions over
 * `BatcherState`, like the rest of the batcher's state.
 */

/** Share of the weighted context below which no connected env's weight falls, so none starves. */
export const MIN_ENV_WEIGHT = 0.01;

/** A registered environment, with Atropos's field names (ATROPOS-API.md §1.2). */
export interface EnvRecord {
  max_context_len: number;
  weight: number;
  desired_name: string;
  real_name: string;
  registered_id: number;
  last_update: number;
  connected: boolean;
  min_batch_allocation: number | null;
  group_size: number;
  run_key?: string;
}

/** The registered env with this id; out-of-range and negative ids are unknown (Python would index from the end). */
export function envAt(state: BatcherState, envId: number | null): EnvRecord | undefined {
  return envId !== null && envId >= 0 ? state.envs[envId] : undefined;
}

/** `POST /register-env`: refused until the trainer's first batch request; `now` becomes `last_update`. */
export function registerEnv(state: BatcherState, request: EnvRegistration, now: number): RegisterEnvResponse {
  if (!state.started) return { status: 'wait for trainer to start' };
  const again = request.run_key === undefined ? undefined : state.envs.find((env) => env.run_key === request.run_key);
  if (again) {
    Object.assign(again, { connected: true, last_update: now });
    return registered(state, again);
  }
  const sameName = state.envs.filter((env) => env.desired_name === request.desired_name).length;
  const env: EnvRecord = {
    max_context_len: request.max_token_length,
    weight: request.weight,
    desired_name: request.desired_name,
    real_name: `${request.desired_name}_${sameName}`,
    registered_id: state.envs.length,
    last_update: now,
    connected: true,
    // Registrations recorded before the field was required may lack it.
    min_batch_allocation: request.min_batch_allocation ?? null,
    group_size: request.group_size,
    ...(request.run_key === undefined ? {} : { run_key: request.run_key }),
  };
  state.envs.push(env);
  return registered(state, env);
}

function registered(state: BatcherState, env: EnvRecord): RegisterEnvResponse {
  return {
    status: 'success',
    env_id: env.registered_id,
    wandb_name: env.real_name,
    checkpoint_dir: state.checkpointDir,
    starting_step: state.step,
    checkpoint_interval: state.saveCheckpointInterval,
    num_steps: state.numSteps,
  };
}

/** `POST /disconnect-env`: only marks the env disconnected; its queued groups stay. */
export function disconnectEnv(state: BatcherState, envId: number): DisconnectEnvResponse {
  const env = envAt(state, envId);
  if (!env) return { status: 'failure', error: 'list index out of range' };
  env.connected = false;
  return { status: 'success' };
}

/**
 * `/status-env` for one env without changing anything (usable from a query), plus the group size the
 * env is seen to use: the larger of its declared size and its largest queued group. Null for an
 * unknown env. Unlike Atropos, other envs' queued groups count also when every group has size 1.
 */
export function computeEnvStatus(state: BatcherState, envId: number): { status: StatusEnv; groupSize: number } | null {
  const env = envAt(state, envId);
  if (!env) return null;
  let weighted = 0;
  let minShare = 0;
  const minSequences = new Map<number | null, number>();
  for (const other of state.envs) {
    if (!other.connected) continue;
    weighted += other.max_context_len * Math.max(0, other.weight);
    if (other.min_batch_allocation === null) continue;
    minShare += other.min_batch_allocation;
    minSequences.set(other.registered_id, Math.trunc(state.batchSize * other.min_batch_allocation));
  }
  // Atropos divides by zero here (HTTP 500) when no connected env has weight; the floor applies instead.
  const share = weighted > 0 ? (env.max_context_len * env.weight) / weighted : 0;

  let maxGroupSize = 1;
  let groupSize = env.group_size;
  let own = 0;
  const othersSequences = new Map<number | null, number>();
  for (const group of state.queue) {
    maxGroupSize = Math.max(maxGroupSize, group.size);
    if (group.envId === envId) {
      groupSize = Math.max(groupSize, group.size);
      own += group.size;
    } else {
      othersSequences.set(group.envId, (othersSequences.get(group.envId) ?? 0) + group.size);
    }
  }
  // Other envs' sequences, rounded up to whole packs, less what their minimums reserve.
  let fromOthers = 0;
  for (const [otherId, sequences] of othersSequences) {
    const packed = Math.ceil(sequences / maxGroupSize) * maxGroupSize;
    fromOthers += Math.max(0, packed - (minSequences.get(otherId) ?? 0));
  }
  return {
    groupSize,
    status: {
      current_step: state.step,
      queue_size: Math.floor((own + fromOthers) / groupSize),
      unallocated_fraction: 1 - Math.min(minShare, 1),
      self_queue_size: Math.floor(own / groupSize),
      max_group_size: maxGroupSize,
      env_weight: Math.max(MIN_ENV_WEIGHT, share),
    },
  };
}

/** `GET /status-env`: `computeEnvStatus`, then record the observed group size on the env, as Atropos does. */
export function statusEnv(state: BatcherState, envId: number): StatusEnv | null {
  const result = computeEnvStatus(state, envId);
  if (!result) return null;
  (state.envs[envId] as EnvRecord).group_size = result.groupSize;
  return result.status;
}

/** `GET /status`: step and queued groups; zeros until the trainer registers. */
export function status(state: BatcherState): Status {
  return state.registered ? { current_step: state.step, queue_size: state.queue.length } : { current_step: 0, queue_size: 0 };
}

/** `GET /info`: -1 until registered; `max_token_len` survives a reset. */
export function info(state: BatcherState): Info {
  return { batch_size: state.batchSize, max_token_len: state.maxTokenLen };
}

/** `GET /wandb_info`. */
export function wandbInfo(state: BatcherState): WandbInfo {
  return { group: state.wandbGroup, project: state.wandbProject };
}
