import { condition, getExternalWorkflowHandle, log } from '@temporalio/workflow';
import type { BatcherRoom } from '../schema/rollout.js';
import { computeEnvStatus, envAt } from './batcher-envs.js';
import { envKey, type BatcherState } from './batcher-state.js';
import { roomChangedSignal } from './messages.js';

/**
 * Backpressure pushed, not polled: env-runs feeding the batcher ask once to watch their env's room, and the
 * batcher signals them whenever it changes (a batch taken, a group dropped, a new step), so an env-run that
 * waits for the trainer adds nothing to either history while it waits.
 */

/** An env-run watching its env's room. */
export interface RoomWatch {
  workflowId: string;
  envId: number;
  /** What was last pushed to it (`roomKey`); null until the first push. */
  pushed: string | null;
}

/** Starts (or restarts, after the env-run continued as new) a watch: the next push goes out at once. */
export function watchRoom(watches: RoomWatch[], workflowId: string, envId: number): void {
  const existing = watches.find((w) => w.workflowId === workflowId);
  if (existing) Object.assign(existing, { envId, pushed: null });
  else watches.push({ workflowId, envId, pushed: null });
}

/**
 * An env's room now, without a version, with the env's share; undefined for an env the batcher does not know (reset
 * away). An env registered with a weight of 0 or less gets no share, the whole room: Atropos's "-1 to ignore" weight.
 */
export function roomOf(state: BatcherState, envId: number): Omit<BatcherRoom, 'version'> | undefined {
  const status = computeEnvStatus(state, envId)?.status;
  const env = envAt(state, envId);
  if (!status || !env) return undefined;
  const counters = state.counters.perEnv[envKey(envId)];
  return {
    currentStep: status.current_step,
    batchSize: state.batchSize,
    queuedGroups: status.self_queue_size,
    receivedGroups: (counters?.received ?? 0) + (counters?.duplicates ?? 0),
    // An env with a minimum share of each batch needs room for at least that much (Atropos adds workers for it).
    ...(env.weight > 0 ? { share: Math.max(status.env_weight, env.min_batch_allocation ?? 0) } : {}),
  };
}

/**
 * What decides whether a push is due: the step, the batch size, the groups that left the queue, and the env's
 * share (another env registering or leaving changes it). Groups arriving do not change an env's room (what it
 * delivered moves from "in transit" to "queued"), so they push nothing.
 */
function roomKey(room: Omit<BatcherRoom, 'version'>): string {
  const key = `${room.currentStep}/${room.batchSize}/${room.receivedGroups - room.queuedGroups}`;
  return room.share === undefined ? key : `${key}/${room.share}`;
}

function isDue(state: BatcherState, watch: RoomWatch): boolean {
  const room = roomOf(state, watch.envId);
  return room !== undefined && roomKey(room) !== watch.pushed;
}

/**
 * Pushes each watcher its room whenever it changed, until `stop()`. Issues only signals (never local activities),
 * so running beside other branches of the batcher keeps its command order on replay. A watcher whose workflow
 * has closed is dropped. `version` is workflow time, kept increasing, so it survives a replaced batcher too.
 */
export async function pushRooms(
  state: BatcherState,
  watches: RoomWatch[],
  stop: () => boolean,
  lastVersion: { value: number },
): Promise<void> {
  for (;;) {
    await condition(() => stop() || watches.some((w) => isDue(state, w)));
    if (stop()) return;
    const sends = watches
      .filter((w) => isDue(state, w))
      .map((watch) => {
        const room = roomOf(state, watch.envId)!;
        watch.pushed = roomKey(room);
        lastVersion.value = Math.max(Date.now(), lastVersion.value + 1);
        const pushed: BatcherRoom = { version: lastVersion.value, ...room };
        return getExternalWorkflowHandle(watch.workflowId)
          .signal(roomChangedSignal, pushed)
          .catch((error: unknown) => {
            log.info('room watcher is gone', { workflowId: watch.workflowId, error: String(error) });
            const at = watches.indexOf(watch);
            if (at >= 0) watches.splice(at, 1);
          });
      });
    await Promise.all(sends);
  }
}
