import { ApplicationFailure, sleep } from '@temporalio/workflow';
import type { RecordDrops } from '../schema/batcher.js';
import { jsonBytes, PAYLOAD_BUDGET_BYTES } from '../schema/payload.js';
import type {
  BatcherRoom,
  EnvRunProgress,
  EvalProgress,
  EvalSchedule,
  GroupSink,
  ItemWait,
  StepOptions,
  StoreRef,
} from '../schema/rollout.js';
import { nextItemWait } from './env-run-state.js';

/** A finished group to hand to the sink: its store key, its sequences, the policy that generated it. */
export interface Delivery {
  ref: StoreRef;
  size: number;
  policyVersion: number | null;
  /** Tokens of its longest sequence, when known (the batcher drops groups at or past the trainer's max_token_len). */
  longestSequence?: number;
}

/** What a strategy's `take` found: an item for the next group; none for now (`later`: ask again after a wait); none. */
export type Taken<Item> = { item: Item } | 'later' | 'none';

/** What the loop reads of an env-run's input; the rest is the strategy's, and continue-as-new carries all of it. */
export interface EnvRunLoopInput<P extends EnvRunProgress = EnvRunProgress> {
  /** Groups to start; the run ends sooner when the strategy is out of items. */
  totalGroups: number;
  maxInFlight: number;
  sink: GroupSink;
  room?: BatcherRoom;
  progress?: P;
  /** Under `serve`: a source with no item now is asked again after this wait (absent: none now ends the items). */
  itemWait?: ItemWait;
}

/**
 * How one kind of environment runs through the env-run loop (`runEnvLoop`): Clotho's own (an item is its index),
 * Atropos's (items from the Python worker's cursor and the groups' backlog), and any other (verifiers). The loop owns
 * the slots, the batcher's room, evaluation's schedule, waits for items, delivery and continue-as-new; a strategy owns
 * its items, its group workflow and what a finished group delivers or drops. Each method is called from the loop at
 * one place, so the commands it issues keep the loop's order: it awaits nothing the loop does not await.
 */
export interface EnvRunStrategy<Item, Result> {
  /** Sequences per group: the batcher's room is counted in groups of it. */
  groupSize: number;
  /** Where `deliverToJsonl` runs: the step's policy and the queue of a worker that registers it. */
  deliver: { step: StepOptions; taskQueue: string };
  /**
   * An item for group `progress.nextItem`, with `wanted` slots free; `ask` is false while a wait for items runs (serve
   * only, `itemWait`): then only items already at hand may be given. `later` only when the input has `itemWait`.
   * A source with its items at hand answers without a promise.
   */
  take(wanted: number, ask: boolean): Taken<Item> | Promise<Taken<Item>>;
  /** Starts item `itemIndex`'s group workflow (its deadline, Atropos's worker_timeout, in its options). */
  start(itemIndex: number, item: Item, policyVersion: number | null): Promise<{ result(): Promise<Result> }>;
  /** A group past its deadline: dropped as `timeout`, never scored. */
  timedOut(itemIndex: number, policyVersion: number | null): Result;
  /** Records finished groups in the progress: what to deliver, in order, and the drops the batcher counts. */
  settle(results: Result[]): { deliveries: Delivery[]; dropped: RecordDrops['dropped'] };
  /** No item is left for good: the run ends once nothing is in flight. */
  outOfItems(): boolean;
  /** Evaluation during training: its schedule, and how one starts (it records its own result in `evals`). */
  evaluation?: {
    schedule: Pick<EvalSchedule, 'everySteps' | 'handling' | 'limitRatio'>;
    start(evals: EvalProgress, step: number): Promise<void>;
  };
  /** At each turn of the loop, before launching (Atropos's `env_step_checks`). */
  atStep?(room: BatcherRoom | undefined): Promise<void>;
  /** After each delivery. */
  afterDelivery?(): Promise<void>;
  /** Before the run ends or continues as new. */
  atEnd?(continuing: boolean): Promise<void>;
}

/**
 * The wait between asks of a source with no item (`itemWait`): a durable timer, `initialMs` doubling to `maximumMs`,
 * back to `initialMs` once an item comes. `state()` changes when a wait starts and when it is over, so the loop wakes.
 */
export function itemWaits(policy: ItemWait | undefined) {
  let state: 'idle' | 'waiting' | 'over' = 'idle';
  let last: number | null = null;
  return {
    asking: () => state !== 'waiting',
    state: () => state,
    start() {
      if (!policy || state === 'waiting') return;
      last = nextItemWait(policy, last);
      state = 'waiting';
      void sleep(last).then(() => (state = 'over'));
    },
    reset() {
      last = null;
    },
  };
}

/**
 * Fails the run, naming the cause, when `value` would travel in a payload past the budget (`PAYLOAD_BUDGET_BYTES`):
 * Temporal refuses payloads past 2 MB, and a run stuck on one fails later and less clearly.
 */
export function payloadTooLarge(value: unknown, what: string): void {
  const bytes = jsonBytes(value);
  if (bytes <= PAYLOAD_BUDGET_BYTES) return;
  throw ApplicationFailure.nonRetryable(
    `${what} is ${bytes} bytes of JSON, past the payload budget of ${PAYLOAD_BUDGET_BYTES} (Temporal refuses payloads past ` +
      `2 MB): what travels in workflow history must be store keys and scalars; put large values in the trajectory store`,
    'PayloadTooLarge',
  );
}
