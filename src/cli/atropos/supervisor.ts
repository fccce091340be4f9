import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { PER_PROCESS_FIELDS } from '../../config/run-config.js';
import type { AtroposReady } from '../../schema/atropos.js';
import { AtroposWorkerExit, type AtroposWorker } from './worker-process.js';

/** How often a dead Python worker is started again: at most `restarts` times within `windowMs`, waiting longer each time. */
export interface RestartPolicy {
  restarts: number;
  windowMs: number;
  /** The wait before the first restart of the window, doubled for each one after it, up to `maxDelayMs`. */
  firstDelayMs: number;
  maxDelayMs: number;
}

/** Restarts within this long count against `--worker-restarts`. */
const RESTART_WINDOW_MS = 10 * 60_000;

/** The flag of every `--atropos` command that bounds its worker's restarts. */
export const WORKER_RESTARTS_FLAGS = {
  'worker-restarts': z.coerce
    .number()
    .int()
    .min(0)
    .default(5)
    .describe('restarts of a Python worker that died, within 10 minutes (1 s, 2 s, 4 s … apart), before the command exits'),
};

/** The policy of `--worker-restarts n`: n restarts within 10 minutes, 1 s, 2 s, 4 s … (at most 30 s) apart. */
export const restartPolicy = (restarts: number): RestartPolicy => ({
  restarts,
  windowMs: RESTART_WINDOW_MS,
  firstDelayMs: 1_000,
  maxDelayMs: 30_000,
});

/** The worker died more often than the policy restarts it (or came back building another environment). */
export class AtroposWorkerGaveUp extends Error {
  override name = 'AtroposWorkerGaveUp';
}

/** A Python worker kept running by {@link superviseAtroposWorker}. */
export interface SupervisedWorker {
  /** The first worker's ready line: the environment as Atropos built it (every restart builds the same). */
  ready: AtroposReady;
  /** Rejects with {@link AtroposWorkerGaveUp} once no worker runs and none will be started; never settles otherwise. */
  gaveUp: Promise<never>;
  /** The last lines the current (or last) worker printed. */
  lastLines(): string;
  /** Stops restarting, stops the current worker, and resolves once it has exited and `onExit` has run for it. */
  stop(): Promise<void>;
}

/** What supervising needs besides a way to start a worker. */
export interface SuperviseOptions {
  policy: RestartPolicy;
  /** Runs once for each worker that exits (whatever ended it), before another is started. */
  onExit(worker: AtroposWorker, code: number | string): Promise<void>;
  /** One line for each restart. */
  notice(line: string): void;
  /** @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
  /** @default Date.now */
  now?: () => number;
}

/** The config a worker built, without the fields that belong to its process (a restart's JSONL path may differ). */
const runFields = (ready: AtroposReady) => Object.entries(ready.config).filter(([field]) => !PER_PROCESS_FIELDS.includes(field));

/**
 * Starts a Python worker and starts it again each time it exits before {@link SupervisedWorker.stop}, after a wait
 * that doubles with each restart in the policy's window, up to the policy's number of restarts in that window; past
 * it (or when a restarted worker builds another config than the first), {@link SupervisedWorker.gaveUp} rejects. A
 * restart that exits before it serves counts as one. The first start's errors are the caller's.
 */
export async function superviseAtroposWorker(start: () => Promise<AtroposWorker>, options: SuperviseOptions): Promise<SupervisedWorker> {
  const { policy, onExit, notice, sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)), now = Date.now } = options;
  const first = await start();
  let current: AtroposWorker | undefined = first;
  let lastLines = () => first.lastLines();
  let stopping = false;
  let wake = () => undefined as void;
  const stopRequested = new Promise<void>((resolve) => (wake = resolve));
  let giveUp!: (error: AtroposWorkerGaveUp) => void;
  const gaveUp = new Promise<never>((_, reject) => (giveUp = reject));
  // Nobody may be racing it (a worker command stopped by Ctrl-C): its rejection is read where it is raced.
  gaveUp.catch(() => undefined);

  const supervise = async () => {
    const restarts: number[] = [];
    for (;;) {
      let code: number | string;
      if (current) {
        code = await current.exited;
        await onExit(current, code);
      } else code = 'did not serve';
      if (stopping) return;
      while (restarts.length > 0 && now() - restarts[0]! >= policy.windowMs) restarts.shift();
      if (restarts.length >= policy.restarts) {
        const exits = restarts.length + 1;
        const times = `${exits} time${exits === 1 ? '' : 's'} within ${policy.windowMs / 60_000} minutes`;
        return giveUp(new AtroposWorkerGaveUp(`the Atropos worker exited (${code}) ${times}; its last lines:\n${lastLines()}`));
      }
      const delay = Math.min(policy.firstDelayMs * 2 ** restarts.length, policy.maxDelayMs);
      const window = `${policy.restarts} within ${policy.windowMs / 60_000} minutes`;
      notice(`the Atropos worker exited (${code}): restart ${restarts.length + 1} of at most ${window}, in ${delay / 1000} s`);
      await Promise.race([sleep(delay), stopRequested]);
      if (stopping) return;
      restarts.push(now());
      current = await start().catch((error: unknown) => {
        if (!(error instanceof AtroposWorkerExit)) throw error;
        lastLines = () => error.output;
        return undefined;
      });
      // Stopped while it started: it exits now, and the loop ends once its exit is handled.
      if (stopping) await current?.stop();
      else if (current && !isDeepStrictEqual(runFields(current.ready), runFields(first.ready))) {
        await current.stop();
        await onExit(current, 'stopped');
        return giveUp(new AtroposWorkerGaveUp("the restarted Atropos worker built another environment config than the run's"));
      }
      if (current) lastLines = current.lastLines;
    }
  };
  const supervising = supervise().catch((error: unknown) => giveUp(new AtroposWorkerGaveUp((error as Error).message)));

  return {
    ready: first.ready,
    gaveUp,
    lastLines: () => lastLines(),
    async stop() {
      stopping = true;
      wake();
      await current?.stop();
      await supervising;
    },
  };
}
