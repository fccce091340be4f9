import { z } from 'zod';
import type { BatcherRoom, EnvRunProgress, EvalHandling, GroupSink, ItemWait, StepOptions, StoreRef } from './rollout.js';

/**
 * What crosses the boundary between Clotho's workflows and the Python worker that serves an Atropos `BaseEnv`
 * (clients/python-atropos, its activities' doc comment): the worker's ready line, the activities' payloads, and the
 * workflows' inputs. Items are Atropos's, encoded by the worker's codec: opaque JSON to Clotho.
 */

/** The one JSON line the Python worker prints once it polls: its queue and the environment as Atropos built it. */
export const AtroposReadySchema = z
  .object({
    event: z.literal('ready'),
    taskQueue: z.string(),
    /** The identity Temporal records for the worker's activities (`pid@host`). */
    identity: z.string(),
    slots: z.number().int().positive(),
    className: z.string(),
    name: z.string().nullable(),
    mode: z.enum(['serve', 'process', 'evaluate']),
    config: z.record(z.string(), z.unknown()),
    usesCheckpoint: z.boolean(),
    maxNumWorkers: z.number().int(),
  })
  .strict();
export type AtroposReady = z.infer<typeof AtroposReadySchema>;

/** `atroposNextItem`'s answer: item `cursor` of the environment's iterator, or `exhausted` when it returned None. */
export interface AtroposNextItem {
  cursor: number;
  item: unknown;
  /** Asked with `count`: up to that many items from `cursor` on, fewer when the iterator ended (`exhausted`). */
  items?: unknown[];
  exhausted: boolean;
  fastForwarded: number;
  fastForwardSeconds: number;
  restoredFrom: number | null;
}

/** Groups Atropos's send filter kept back, each with its reason. */
export interface AtroposDropped {
  index: number;
  reason: string;
}

/** `atroposCollect`'s answer with a store target: references to the kept groups, or why there are none. */
export type AtroposCollected =
  | {
      status: 'scored';
      list: boolean;
      groupRefs: StoreRef[];
      scores: number[][];
      dropped: AtroposDropped[];
      backlog: unknown[];
      seconds: number;
    }
  | { status: 'declined'; reason: string; dropped: AtroposDropped[]; backlog: unknown[]; seconds: number };

/**
 * What `save_checkpoint` wrote (null when it saved nothing), and how many items the iterator had given then. A worker
 * given a store keeps what it wrote there by content and answers its key (`ref`, `data` null): it travels with every
 * `atroposNextItem`, so it stays a key in history however much the class saves.
 */
export interface AtroposCheckpoint {
  cursor: number;
  data: unknown;
  ref?: StoreRef;
}

/**
 * The trajectory store an activity writes to and reads from (a directory): `run` is `<run>/<env>`, under which items
 * (`items/<sha256>`) and checkpoints (`checkpoints/<sha256>`) are kept by content; `key` a group's, `<run>/<env>/item-<i>`,
 * under which each attempt of its collect writes its groups (`attempt-<n>/group-<k>`). Items past a small size, and
 * every put-back item, travel as `{"$stored": key}` (clients/python-atropos, payloads.py): opaque to the workflows.
 */
export interface AtroposStoreTarget {
  root: string;
  run: string;
  key?: string;
}

/** `atroposEvaluate`'s answer: what the environment's `evaluate` produced. */
export interface AtroposEvaluated {
  /** What `evaluate` returned (most return None: null), as JSON or its repr. */
  result: unknown;
  /** The (name, value) pairs it appended to `eval_metrics`, over the metrics it gave `evaluate_log`. */
  metrics: Record<string, unknown>;
  /** The metrics it gave `evaluate_log` (which wrote them to data_dir_to_save_evals), or null when it did not call it. */
  logged: Record<string, unknown> | null;
  seconds: number;
}

/** The Python worker's activities, as workflows call them (`proxyActivities<AtroposActivities>`). */
export interface AtroposActivities {
  atroposNextItem(input: {
    cursor: number;
    checkpoint?: AtroposCheckpoint | null;
    count?: number;
    store?: AtroposStoreTarget;
  }): Promise<AtroposNextItem>;
  /** With `cursor`, a worker behind the run's cursor (a new one) first brings its iterator there, from `checkpoint`. */
  atroposCheckpoint(input: {
    step: number;
    cursor?: number;
    checkpoint?: AtroposCheckpoint | null;
    store?: AtroposStoreTarget;
  }): Promise<AtroposCheckpoint & Pick<AtroposNextItem, 'restoredFrom' | 'fastForwarded'>>;
  /** What the environment's `wandb_log` logs (it still logs to wandb when use_wandb is on): numbers only. */
  atroposMetrics(input: { step?: number }): Promise<{ metrics: Record<string, number> }>;
  /** `maxTokenLen`: the trainer's, which Atropos's send filter drops a group at or past under `serve`. */
  atroposCollect(input: {
    itemIndex: number;
    item: unknown;
    store: AtroposStoreTarget & { key: string };
    maxTokenLen?: number;
  }): Promise<AtroposCollected>;
  atroposEvaluate(input: { step?: number }): Promise<AtroposEvaluated>;
}

/** One run of an Atropos environment's `evaluate` (`clotho evaluate --atropos`): where, and under which policy. */
export interface AtroposEvaluationInput {
  runId: string;
  environment: string;
  /** The Python worker's queue. */
  taskQueue: string;
  evaluate: StepOptions;
}

/** One group of an Atropos run: its item, fixed when the env-run takes it from the cursor or the backlog. */
export interface AtroposGroupInput {
  runId: string;
  environment: string;
  itemIndex: number;
  /** As the worker encoded it, or its key in the store (`{"$stored": key}`) when it was large. */
  item: unknown;
  /** The file-system trajectory store the worker writes the group into, and reads a stored item from. */
  storeRoot: string;
  /** The Python worker's queue. */
  taskQueue: string;
  collect: StepOptions;
  policyVersion: number | null;
  /** Whether the server has Clotho's search attributes. */
  searchAttributes: boolean;
  /** The trainer's max_token_len, handed to the collect (its env-run's). */
  maxTokenLen?: number;
}

/** A finished Atropos group: references to what it delivers, or the reason it delivers nothing. */
export interface AtroposGroupResult {
  itemIndex: number;
  status: 'scored' | 'declined';
  /** Why a declined group delivers nothing (`declined` when `collect_trajectories` returned None). */
  reason?: string;
  groups: StoreRef[];
  scores: number[][];
  /** Groups Atropos's send filter kept back, by reason. */
  dropped: Record<string, number>;
  /** Items `collect_trajectories` put back (Atropos's backlog): they go into the run's queue. */
  backlog: unknown[];
  policyVersion: number | null;
}

/** An Atropos env-run's progress: Clotho's, with reasons of Atropos's own, the cursor and the backlog. */
export interface AtroposProgress extends EnvRunProgress {
  dropped: Record<string, number>;
  /** Items taken from the environment's iterator: the next `atroposNextItem` asks for this one. */
  cursor: number;
  /** Whether the iterator returned None (under `process`): only the backlog feeds the run from then on. */
  exhausted: boolean;
  /** Items put back by groups, waiting for a group of their own (oldest first). */
  backlog: unknown[];
  /** The newest checkpoint of a class that keeps them, given with every `atroposNextItem` to restore from. */
  checkpoint?: AtroposCheckpoint & { step: number };
  /** The last time a worker brought its iterator to the cursor: the checkpoint it restored, and the items it skipped. */
  restored?: { cursor: number; from: number | null; fastForwarded: number };
  /** The trainer's step the run's hooks last saw, and the groups counted when the environment last logged. */
  hooks?: { seenStep: number | null; loggedAt: number };
}

/** Atropos's `evaluate()` every `steps_per_eval` trainer steps (`env_step_checks`), under `serve` only. */
export interface AtroposEvalSchedule {
  everySteps: number;
  handling: EvalHandling;
  limitRatio: number;
  /** Options of the `atroposEvaluate` activity: long, heartbeating. */
  step: StepOptions;
}

/** What Atropos's own loop does besides collecting, that an env-run does in its place. */
export interface AtroposRunHooks {
  /** Whether the class keeps checkpoints (`save_checkpoint`/`load_checkpoint`, the ready line's `usesCheckpoint`). */
  usesCheckpoint: boolean;
  /** Under `serve`: a checkpoint whenever the trainer's step crosses a multiple of its checkpoint_interval (> 0). */
  checkpointInterval?: number;
  evaluation?: AtroposEvalSchedule;
  /** Atropos's min_items_sent_before_logging: under `serve`, `wandb_log` waits for this many groups sent. */
  minGroupsToLog: number;
}

export interface AtroposEnvRunInput {
  runId: string;
  environment: string;
  /** sha256 of the run config recorded from the worker's ready line (`<run>/<env>/run-config`). */
  configDigest: string;
  /** Groups to start (Atropos's total_steps). */
  totalGroups: number;
  maxInFlight: number;
  /** Where delivered groups go: the JSONL file `process` writes, or the batcher `serve` feeds. */
  sink: Exclude<GroupSink, { kind: 'none' }>;
  /** Sequences per group (Atropos's group_size): the batcher's room is counted in groups of it. */
  groupSize: number;
  storeRoot: string;
  taskQueues: { workflows: string; atropos: string };
  steps: { next: StepOptions; collect: StepOptions; deliver: StepOptions };
  searchAttributes: boolean;
  /** Atropos's worker_timeout: a group's deadline, after which it is dropped (`timeout`). */
  groupTimeoutSeconds?: number;
  /**
   * Under `serve`: when `get_next_item` returns None, ask again after this wait, as Atropos's serve loop asks again.
   * Absent (`process`, and runs started before it): None ends the run's items once nothing was put back.
   */
  itemWait?: ItemWait;
  progress?: AtroposProgress;
  /** Checkpoints, metrics and evaluations; absent from runs started before them. */
  hooks?: AtroposRunHooks;
  /** The batcher's last pushed room, carried across continue-as-new. */
  room?: BatcherRoom;
  /**
   * The trainer's max_token_len under `serve`, read from the batcher once registered as Atropos reads `/info`: every
   * collect hands it to the environment, whose send filter drops a group at or past it. Absent under `process`.
   */
  maxTokenLen?: number;
}
