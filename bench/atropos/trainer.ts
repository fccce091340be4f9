/** The trainer both stacks of bench/atropos serve: Atropos's example trainer's calls, with no training between them. */
import { requestsBetween } from '../support.js';

/** What the trainer registers: batches of `batchSize` sequences, `steps` of them, no checkpoints. */
const registration = (batchSize: number, steps: number) => ({
  wandb_group: 'bench',
  wandb_project: 'bench',
  batch_size: batchSize,
  max_token_len: 2048,
  checkpoint_dir: 'ckpt',
  save_checkpoint_interval: 0,
  starting_step: 0,
  num_steps: steps,
});

/**
 * How long the trainer waits after an empty `GET /batch` before asking again: Atropos's example trainer waits 1 s,
 * which would make the trainer the bottleneck here (the queue's room of `max_batches_offpolicy` batches fills sooner).
 */
const EMPTY_POLL_MS = 100;

/** Registers at `url` and asks for a first batch, which marks the trainer started: environments may register after it. */
export async function startTrainer(url: string, batchSize: number, steps: number): Promise<void> {
  const registered = await fetch(`${url}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(registration(batchSize, steps)),
  });
  if (!registered.ok) throw new Error(`${url}/register answered ${registered.status}: ${await registered.text()}`);
  await takeBatch(url);
}

async function takeBatch(url: string): Promise<unknown[] | null> {
  const response = await fetch(`${url}/batch`);
  if (!response.ok) throw new Error(`${url}/batch answered ${response.status}: ${await response.text()}`);
  const { batch } = (await response.json()) as { batch: unknown[] | null };
  return batch;
}

/** What the trainer saw between the end of warm-up and its last batch. */
export interface Window {
  seconds: number;
  /** Groups in the batches taken in the window. */
  groups: number;
  /** CPU ms of each part the stack charges, used in the window. */
  cpuMs: number[];
  /** CPU ms of this process (the scripted model server and the trainer) in the window. */
  selfCpuMs: number;
  /** `GET /batch` calls that found no batch in the window: each costs the API (and Clotho's batcher) a request. */
  emptyPolls: number;
  /** Requests the Temporal server answered in the window, by operation (Clotho's stack). */
  requests?: { total: number; byOperation: Record<string, number> };
}

/** Options of {@link takeBatches}. */
export interface TakeOptions {
  steps: number;
  /** Batches taken before the window opens: the environment's start and its first groups are left out. */
  warmup: number;
  /** CPU ms used so far by each part of the stack. */
  readCpu: () => number[];
  /** Why the stack cannot deliver any more (a process exited), or undefined. */
  problem: () => string | undefined;
  /** The Temporal server's requests so far by operation, where the stack has one. */
  serverRequests?: () => Promise<Record<string, number>>;
  timeoutMs: number;
}

/** Takes `steps` batches, reading the time and the stack's CPU when the `warmup`-th and the last arrive. */
export async function takeBatches(url: string, o: TakeOptions): Promise<Window> {
  const deadline = Date.now() + o.timeoutMs;
  let open = { at: 0, cpuMs: [] as number[], self: process.cpuUsage(), requests: {} as Record<string, number> };
  let groups = 0;
  let emptyPolls = 0;
  for (let taken = 0; taken < o.steps;) {
    const batch = await takeBatch(url);
    if (batch === null) {
      const problem = o.problem();
      if (problem !== undefined) throw new Error(`after ${taken} of ${o.steps} batches: ${problem}`);
      if (Date.now() > deadline) throw new Error(`took ${taken} of ${o.steps} batches in ${o.timeoutMs / 1000} s`);
      if (taken >= o.warmup) emptyPolls++;
      await new Promise((resolve) => setTimeout(resolve, EMPTY_POLL_MS));
      continue;
    }
    taken++;
    if (taken > o.warmup) groups += batch.length;
    if (taken === o.warmup) {
      open = { at: performance.now(), cpuMs: o.readCpu(), self: process.cpuUsage(), requests: (await o.serverRequests?.()) ?? {} };
    }
  }
  const seconds = (performance.now() - open.at) / 1000;
  const cpuMs = o.readCpu().map((ms, i) => ms - open.cpuMs[i]!);
  const self = process.cpuUsage(open.self);
  // Read after the clock and CPU: the metrics request is not part of the window.
  const requests = await o.serverRequests?.();
  return {
    ...(requests ? { requests: requestsBetween(open.requests, requests) } : {}),
    seconds,
    groups,
    cpuMs,
    selfCpuMs: (self.user + self.system) / 1000,
    emptyPolls,
  };
}
