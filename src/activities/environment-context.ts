import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Liveness, ModelClient } from '../env/define.js';
import { environmentNamed, type LoadedEnvironment } from '../env/loaded.js';
import { isTool, type Tool } from '../env/tools.js';
import { PROGRESS_INTERVAL_MS } from '../inference/types.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { groupKey, type GroupAddress } from './group-state.js';

/** What activities that run environment code are built from. */
export interface EnvironmentActivityDeps {
  environments: Record<string, LoadedEnvironment>;
  store: TrajectoryStore;
  /** The judge model of each environment (`--judge.*`); undefined when none is configured. */
  judge?: (environment: string) => ModelClient | undefined;
}

/** The environment and item a group is about. */
export function itemOf(environments: Record<string, LoadedEnvironment>, address: GroupAddress) {
  const env = environmentNamed(environments, address.environment);
  return { env, item: env.items.get(address.itemIndex) };
}

/** The running activity's heartbeat and cancellation, as environment functions see them. */
export function liveness(): Liveness {
  const context = Context.current();
  // A local activity has no heartbeat (its workflow task's timeout is what notices a dead worker): a no-op there.
  if (context.info.isLocal) return { signal: context.cancellationSignal, heartbeat: () => undefined };
  return { signal: context.cancellationSignal, heartbeat: (details) => context.heartbeat(details) };
}

/**
 * Runs `work` while the activity heartbeats every {@link PROGRESS_INTERVAL_MS} (or a third of a shorter heartbeat
 * timeout), whatever the environment's code does:
 * an attempt on a worker that died stops heartbeating and is retried once the step's heartbeat timeout passes (10 s
 * by default) rather than its start-to-close timeout, and a live attempt keeps heartbeating, so no second attempt
 * starts beside it. Work that blocks the event loop longer than the heartbeat timeout must run off the main thread.
 */
export async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  const context = Context.current();
  if (context.info.isLocal) return work();
  context.heartbeat();
  const timer = setInterval(() => context.heartbeat(), heartbeatEvery());
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** How often the running activity heartbeats: every {@link PROGRESS_INTERVAL_MS}, or a third of a shorter timeout. */
export function heartbeatEvery(): number {
  return Math.min(PROGRESS_INTERVAL_MS, (Context.current().info.heartbeatTimeoutMs ?? Infinity) / 3);
}

/** Where a group's `setup` result is kept. */
export const setupKey = (address: GroupAddress) => groupKey(address, 'setup');

/**
 * What the group's `setup` returned, or null when it has none: without a `setup`, the environment's groups ran none
 * (the workflow's hooks follow the definition), so the store is not asked on every score, step and tool call.
 */
export async function groupResource(store: TrajectoryStore, address: GroupAddress, env: LoadedEnvironment): Promise<unknown> {
  if (!env.definition.setup) return null;
  return ((await store.tryGet<{ value: unknown }>(setupKey(address))) ?? { value: null }).value;
}

/** The executable tools an environment offers for an item. */
export async function executableTools(env: LoadedEnvironment, item: unknown): Promise<Tool[]> {
  return ((await env.definition.tools?.(item, env.config)) ?? []).filter(isTool);
}

/**
 * The judge as a step's code calls it: the step's cancellation, and a heartbeat while the judge works (a judge that
 * thinks for longer than the step's heartbeat timeout is not mistaken for a dead worker).
 */
export function liveJudge(judge: ModelClient): ModelClient {
  const { signal, heartbeat } = liveness();
  return { complete: (messages, options) => judge.complete(messages, { signal, onProgress: () => heartbeat(), ...options }) };
}

/** A judge that says which flag is missing when an environment calls it without one configured. */
export function judgeOrMissing(judge: ModelClient | undefined, environment: string): ModelClient {
  return (
    judge ?? {
      complete: () => {
        throw ApplicationFailure.nonRetryable(
          `environment "${environment}" calls a judge model, but none is configured: set --judge.base_url (and --judge.model_name)`,
          'ConfigError',
        );
      },
    }
  );
}
