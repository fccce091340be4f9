import type { Monitor } from './monitor.js';
import type { Prng } from './prng.js';
import type { EnvMode } from './processes.js';
import type { ChaosWorld, Target } from './world.js';

/** Seconds the pipeline may take, beyond the restart delay, to work again after a kill of each target. */
export type RecoveryBounds = Record<Target, number>;

/** One kill and what followed it. Times are `Date.now()` values; `at` is seconds since the chaos began. */
export interface KillRecord {
  n: number;
  target: Target;
  /** How the environment process came back (alternately `clotho worker` and `clotho serve`). */
  mode?: EnvMode;
  /** Model calls in flight at the kill of an Atropos run's Python worker: the groups it was killed in the middle of. */
  modelCallsInFlight?: number;
  at: number;
  killedAt: number;
  restartAt: number;
  /** The restarted process was ready: listening, registered, polling, serving. */
  upAt?: number;
  /** The first group the batcher received after the restart. */
  ingestedAt?: number;
  /** The first batch the trainer acked after the restart. */
  ackedAt?: number;
  /** When the kill counts as recovered from (see {@link recoveredAt}); absent when it never was. */
  recoveredAt?: number;
  boundS: number;
  error?: string;
}

/**
 * What "recovered" means per target: for the environment process, a group of the restarted process reached the
 * batcher; for the trainer, the restarted trainer acked a batch; for the API and the server, both (a group was
 * received and a batch acked, each after the restart).
 */
export function recoveredAt(kill: Pick<KillRecord, 'target' | 'ingestedAt' | 'ackedAt'>): number | undefined {
  const { ingestedAt, ackedAt } = kill;
  if (kill.target === 'env') return ingestedAt;
  if (kill.target === 'trainer') return ackedAt;
  return ingestedAt !== undefined && ackedAt !== undefined ? Math.max(ingestedAt, ackedAt) : undefined;
}

export interface ChaosSchedule {
  killsPerTarget: number;
  /** Which processes to kill. @default all four */
  targets?: Target[];
  /** Seconds between a recovery and the next kill, drawn uniformly. */
  killDelayS: [number, number];
  /** Seconds between a kill and the restart, drawn uniformly. */
  restartDelayS: [number, number];
  bounds: RecoveryBounds;
  /**
   * When set, a kill's bound counts from the restarted process being up rather than from its restart:
   * `max(seconds to up, boundFloorS) + bounds[target]`, for a restart whose own start-up is long and varies (a Python
   * worker importing Atropos), and work that moves only once a timeout of `boundFloorS` has run out since the kill.
   */
  boundFloorS?: number;
  /** Seconds after which a kill counts as not recovered from, and the chaos stops. */
  giveUpS: number;
  /** Groups that must be left in the run before a kill, so that its recovery can be seen. */
  minGroupsLeft: number;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const TARGETS: Target[] = ['env', 'api', 'trainer', 'temporal'];

/** The kill order: each target `killsPerTarget` times, shuffled. */
export function killOrder(prng: Prng, killsPerTarget: number, targets: Target[] = TARGETS): Target[] {
  return prng.shuffle(targets.flatMap((t) => Array.from({ length: killsPerTarget }, () => t)));
}

/**
 * Keeps enough of the run for the kills still to come: model latency goes up when fewer than `low` groups are left
 * per kill, down when more than `high` are (a faster or slower machine than expected), within [min, max] ms.
 */
export function pace(pacing: { delayMs: number }, groupsPerKill: number, limits = { low: 10, high: 25, min: 200, max: 2_000 }): void {
  if (groupsPerKill < limits.low) pacing.delayMs = Math.min(limits.max, pacing.delayMs * 1.5);
  else if (groupsPerKill > limits.high) pacing.delayMs = Math.max(limits.min, pacing.delayMs / 1.5);
}

/**
 * Kills one process at a time at a random moment, restarts it after a random delay, and waits until the pipeline
 * works again. Stops at the first kill not recovered from within `giveUpS` (that kill is the finding), at an
 * unexpected exit of another process, or when the run is too near its end for another kill to be seen.
 */
export async function runKills(options: {
  world: ChaosWorld;
  monitor: Monitor;
  prng: Prng;
  schedule: ChaosSchedule;
  startedAt: number;
  /** The model's latency, adjusted between kills so that the run lasts until the last one ({@link pace}). */
  pacing: { delayMs: number };
  log: (line: string) => void;
}): Promise<{ kills: KillRecord[]; stoppedEarly?: string }> {
  const { world, monitor, prng, schedule, startedAt, log } = options;
  const order = killOrder(prng, schedule.killsPerTarget, schedule.targets);
  const kills: KillRecord[] = [];
  // Which mode the first restart of the environment process takes is drawn, so that over seeds the run ends under
  // `clotho serve` (which exits when its run is done) as well as under `clotho worker` (which the harness stops).
  const modes: EnvMode[] = prng.next() < 0.5 ? ['worker', 'serve'] : ['serve', 'worker'];
  let envKills = 0;
  for (const [i, target] of order.entries()) {
    await pause(prng.between(...schedule.killDelayS) * 1000);
    const restartDelay = prng.between(...schedule.restartDelayS) * 1000;
    if (world.exits.length > 0) return { kills, stoppedEarly: `${world.exits[0]!.name} exited on its own (${world.exits[0]!.code})` };
    const left = groupsLeft(world, monitor);
    if (left !== undefined && left < schedule.minGroupsLeft) {
      return {
        kills,
        stoppedEarly: `only ${left} groups left in the run before kill ${i + 1}: too few to see a recovery (raise the run's size)`,
      };
    }
    if (left !== undefined) pace(options.pacing, (left - schedule.minGroupsLeft) / (order.length - i));

    const mode: EnvMode | undefined = target === 'env' ? modes[envKills++ % 2] : undefined;
    const calls = target === 'env' && world.setup.atropos ? await world.midGroup() : undefined;
    const killedAt = Date.now();
    const kill: KillRecord = {
      n: i + 1,
      target,
      ...(mode ? { mode } : {}),
      ...(calls === undefined ? {} : { modelCallsInFlight: calls }),
      at: (killedAt - startedAt) / 1000,
      killedAt,
      restartAt: 0,
      boundS: restartDelay / 1000 + schedule.bounds[target],
    };
    kills.push(kill);
    const midGroup = calls === undefined ? '' : ` (its Python worker, ${calls} model calls in flight)`;
    log(
      `chaos: kill ${kill.n} of ${order.length}: ${target}${midGroup} at ${kill.at.toFixed(1)} s; restart in ${(restartDelay / 1000).toFixed(1)} s${mode ? ` as clotho ${mode}` : ''}`,
    );
    const ingestedBefore = monitor.received(world.envId) ?? 0;
    try {
      await world.kill(target);
    } catch (error) {
      kill.error = `kill failed: ${(error as Error).message}`;
      return { kills, stoppedEarly: `kill ${kill.n} (${target}): ${kill.error}` };
    }
    await pause(restartDelay);
    kill.restartAt = Date.now();
    // A group received after the restart must be new, not one the batcher took in just before the kill.
    const snapshot = target === 'env' ? (monitor.received(world.envId) ?? ingestedBefore) : ingestedBefore;
    try {
      kill.upAt = await world.start(target, mode);
      if (schedule.boundFloorS !== undefined)
        kill.boundS = Math.max((kill.upAt - killedAt) / 1000, schedule.boundFloorS) + schedule.bounds[target];
    } catch (error) {
      kill.error = `restart failed: ${(error as Error).message}`;
      return { kills, stoppedEarly: `kill ${kill.n} (${target}): ${kill.error}` };
    }
    const deadline = kill.killedAt + schedule.giveUpS * 1000;
    while (Date.now() < deadline && world.exits.length === 0) {
      kill.ingestedAt ??= monitor.receivedAfter(world.envId, kill.restartAt, snapshot);
      kill.ackedAt ??= monitor.ackAfter(kill.restartAt);
      kill.recoveredAt = recoveredAt(kill);
      if (kill.recoveredAt !== undefined) break;
      await pause(100);
    }
    const recovered =
      kill.recoveredAt === undefined ? 'NOT RECOVERED' : `recovered after ${((kill.recoveredAt - killedAt) / 1000).toFixed(1)} s`;
    log(`chaos: kill ${kill.n} (${target}): ${recovered}`);
    if (kill.recoveredAt === undefined) {
      const why =
        world.exits.length > 0
          ? `${world.exits[0]!.name} exited on its own (${world.exits[0]!.code})`
          : `nothing within ${schedule.giveUpS} s`;
      return {
        kills,
        stoppedEarly: `kill ${kill.n} (${target}${mode ? `, restarted as clotho ${mode}` : ''}) was not recovered from: ${why}`,
      };
    }
  }
  return { kills };
}

/** Groups the run may still deliver before the trainer's last step, as the batcher last said. */
function groupsLeft(world: ChaosWorld, monitor: Monitor): number | undefined {
  const latest = monitor.latest();
  return latest && world.setup.numSteps - latest.view.status.current_step;
}
