import { z } from 'zod';
import type { ActivitiesOf, BoundaryContract } from './boundary.js';
import {
  StoreRefSchema,
  type BatcherRoom,
  type EnvRunProgress,
  type EvalHandling,
  type GroupSink,
  type ItemWait,
  type StepOptions,
  type StoreRef,
} from './rollout.js';
import { ScoredDataGroupSchema } from './scored-data.js';

/**
 * What crosses the boundary between Clotho's workflows and the Python worker that serves an Atropos `BaseEnv`
 * (clients/python-atropos, its activities' doc comment): the worker's ready line, heartbeats and activities' payloads
 * as zod schemas ({@link ATROPOS_BOUNDARY}), the one source of both sides' types: TypeScript's are inferred from them,
 * and the worker validates against the JSON Schema generated from them (`npm run boundary-schemas`). Then the
 * workflows' inputs, which stay in TypeScript. Items are Atropos's, encoded by the worker's codec: opaque JSON to
 * Clotho. Workflows import this module `import type` only: zod is not for the workflow sandbox.
 */

/**
 * The trajectory store an activity writes to and reads from (a directory): `run` is `<run>/<env>`, under which items
 * (`items/<sha256>`) and checkpoints (`checkpoints/<sha256>`) are kept by content; `key` a group's, `<run>/<env>/item-<i>`,
 * under which each attempt of its collect writes its groups (`attempt-<n>/group-<k>`). Items past a small size, and
 * every put-back item, travel as `{"$stored": key}` (clients/python-atropos, payloads.py): opaque to the workflows.
 */
export const AtroposStoreTargetSchema = z.strictObject({ root: z.string(), run: z.string(), key: z.string().optional() });
export type AtroposStoreTarget = z.infer<typeof AtroposStoreTargetSchema>;

/** An item as the worker's codec encoded it, or its key in the store (`{"$stored": key}`): opaque JSON to Clotho. */
const ItemSchema = z.unknown();

const StoreRef = StoreRefSchema.strict();
const count = z.number().int().nonnegative();

/**
 * What `save_checkpoint` wrote (null when it saved nothing), and how many items the iterator had given then. A worker
 * given a store keeps what it wrote there by content and answers its key (`ref`, `data` null): it travels with every
 * `atroposNextItem`, so it stays a key in history however much the class saves.
 */
export const AtroposCheckpointSchema = z.strictObject({ cursor: count, data: z.unknown(), ref: StoreRef.optional() });
export type AtroposCheckpoint = z.infer<typeof AtroposCheckpointSchema>;

/** A checkpoint handed back to a worker to restore from: as the env-run keeps it, with the trainer's step it was taken at. */
const KeptCheckpointSchema = AtroposCheckpointSchema.extend({ step: z.number().int().optional() });

/** How a worker brought its iterator to the cursor it was asked for: the checkpoint it restored, the items it skipped. */
const restored = { restoredFrom: count.nullable(), fastForwarded: count };

/** `atroposDescribe`'s answer: the environment as Atropos built it. */
export const AtroposDescribedSchema = z.strictObject({
  className: z.string(),
  name: z.string().nullable(),
  mode: z.enum(['serve', 'process', 'evaluate']),
  config: z.record(z.string(), z.unknown()),
  usesCheckpoint: z.boolean(),
  maxNumWorkers: z.number().int(),
});

/** The one JSON line the Python worker prints once it polls: its queue and the environment as Atropos built it. */
export const AtroposReadySchema = AtroposDescribedSchema.extend({
  event: z.literal('ready'),
  taskQueue: z.string(),
  /** The identity Temporal records for the worker's activities (`pid@host`). */
  identity: z.string(),
  slots: z.number().int().positive(),
});
export type AtroposReady = z.infer<typeof AtroposReadySchema>;

/**
 * What every activity heartbeats: the seconds so far, where the environment's task is (`file:line in function`,
 * innermost last) and the process's last lines of output when there are any; `atroposNextItem` adds the items its
 * fast-forward has skipped so far.
 */
export const AtroposHeartbeatSchema = z.strictObject({
  seconds: z.number(),
  stack: z.array(z.string()).optional(),
  lastOutput: z.array(z.string()).optional(),
  fastForwarded: count.optional(),
});

export const AtroposNextItemInputSchema = z.strictObject({
  cursor: count,
  checkpoint: KeptCheckpointSchema.nullable().optional(),
  /** Up to this many items from `cursor` on, in one call: the slots the run has free. */
  count: z.number().int().positive().optional(),
  store: AtroposStoreTargetSchema.optional(),
});

/** `atroposNextItem`'s answer: item `cursor` of the environment's iterator, or `exhausted` when it returned None. */
export const AtroposNextItemSchema = z.strictObject({
  cursor: count,
  item: ItemSchema,
  /** Asked with `count`: up to that many items from `cursor` on, fewer when the iterator ended (`exhausted`). */
  items: z.array(ItemSchema).optional(),
  exhausted: z.boolean(),
  fastForwardSeconds: z.number().nonnegative(),
  ...restored,
});
export type AtroposNextItem = z.infer<typeof AtroposNextItemSchema>;

/** Groups Atropos's send filter kept back, each with its reason. */
export const AtroposDroppedSchema = z.strictObject({ index: count, reason: z.string() });
export type AtroposDropped = z.infer<typeof AtroposDroppedSchema>;

/** Where a collect writes its group: the run's store, under the group's key (runs started before items were stored name no run). */
const GroupTargetSchema = AtroposStoreTargetSchema.extend({ run: z.string().optional(), key: z.string() });

/** `atroposCollect` as the workflows call it: with its group's store key. `maxTokenLen`: the trainer's, under `serve`. */
export const AtroposCollectInputSchema = z.strictObject({
  itemIndex: count,
  item: ItemSchema,
  store: GroupTargetSchema,
  maxTokenLen: z.number().int().positive().optional(),
});

const outcome = { dropped: z.array(AtroposDroppedSchema), backlog: z.array(ItemSchema), seconds: z.number().nonnegative() };
const ScoredSchema = z.strictObject({
  status: z.literal('scored'),
  list: z.boolean(),
  groupRefs: z.array(StoreRef),
  scores: z.array(z.array(z.number())),
  ...outcome,
});
const DeclinedSchema = z.strictObject({ status: z.literal('declined'), reason: z.string(), ...outcome });

/**
 * `atroposCollect`'s answer to the workflows: references to the kept groups in the store (one list of scores per
 * group), or why there are none.
 */
export const AtroposCollectedSchema = z.discriminatedUnion('status', [ScoredSchema, DeclinedSchema]);
export type AtroposCollected = z.infer<typeof AtroposCollectedSchema>;

/** Scored groups in the answer itself: a collect given no store, and `atroposPostprocess`. */
const ScoredInlineSchema = ScoredSchema.omit({ groupRefs: true, scores: true }).extend({ groups: z.array(ScoredDataGroupSchema) });

/**
 * What else the worker's collect takes: no store (the groups come back inline), or `postprocess: false` (the groups as
 * `collect_trajectories` returned them, `collected`, for `atroposPostprocess` to finish as a step of its own).
 */
const CollectWireInputSchema = AtroposCollectInputSchema.extend({
  store: GroupTargetSchema.optional(),
  postprocess: z.boolean().optional(),
});
const CollectWireAnswerSchema = z.union([
  AtroposCollectedSchema,
  ScoredInlineSchema,
  z.strictObject({
    status: z.literal('collected'),
    groups: z.array(ScoredDataGroupSchema),
    list: z.boolean(),
    backlog: outcome.backlog,
    seconds: outcome.seconds,
  }),
]);

const PostprocessInputSchema = z.strictObject({
  itemIndex: count,
  item: ItemSchema,
  groups: z.array(ScoredDataGroupSchema).min(1),
  /** Whether `collect_trajectories` returned a list of groups (else one group, the first of `groups`). */
  list: z.boolean(),
  store: GroupTargetSchema.optional(),
  maxTokenLen: z.number().int().positive().optional(),
});
const PostprocessAnswerSchema = z.union([
  ScoredSchema.omit({ backlog: true }),
  ScoredInlineSchema.omit({ backlog: true }),
  DeclinedSchema.omit({ backlog: true }),
]);

/** What a value the worker could not give as JSON travels as: its Python repr. */
const orRepr = <T extends z.ZodType>(schema: T) => z.union([schema, z.string()]);

/** `atroposEvaluate`'s answer: what the environment's `evaluate` produced. */
export const AtroposEvaluatedSchema = z.strictObject({
  /** What `evaluate` returned (most return None: null), as JSON or its repr. */
  result: z.unknown(),
  /** The (name, value) pairs it appended to `eval_metrics`, over the metrics it gave `evaluate_log`. */
  metrics: orRepr(z.record(z.string(), z.unknown())),
  /**
   * The metrics it gave `evaluate_log` (which wrote them to data_dir_to_save_evals), or null when it did not call it.
   * Absent from answers recorded before it was added.
   */
  logged: orRepr(z.record(z.string(), z.unknown())).nullable().optional(),
  seconds: z.number().nonnegative(),
});
export type AtroposEvaluated = z.infer<typeof AtroposEvaluatedSchema>;

/** The trainer's step, which `evaluate` and `wandb_log` see as `curr_step`. */
const StepInputSchema = z.strictObject({ step: z.number().int().optional() });

/** With `cursor`, a worker behind the run's cursor (a new one) first brings its iterator there, from `checkpoint`. */
const CheckpointInputSchema = z.strictObject({
  step: z.number().int(),
  cursor: count.optional(),
  checkpoint: KeptCheckpointSchema.nullable().optional(),
  store: AtroposStoreTargetSchema.optional(),
});

/** What the environment's `wandb_log` logs (it still logs to wandb when use_wandb is on): finite numbers only. */
const MetricsSchema = z.strictObject({ metrics: z.record(z.string(), z.number()) });

/**
 * The Python worker's boundary (clients/python-atropos, its activities' doc comment): each activity's input and
 * answer, and the messages it sends besides. `boundary.schema.json` in the package is generated from it, and the
 * worker validates against that file.
 */
export const ATROPOS_BOUNDARY = {
  source: 'src/schema/atropos.ts',
  activities: {
    atroposDescribe: { input: z.strictObject({}), answer: AtroposDescribedSchema },
    atroposNextItem: { input: AtroposNextItemInputSchema, answer: AtroposNextItemSchema },
    atroposCollect: { input: CollectWireInputSchema, answer: CollectWireAnswerSchema },
    atroposPostprocess: { input: PostprocessInputSchema, answer: PostprocessAnswerSchema },
    atroposEvaluate: { input: StepInputSchema, answer: AtroposEvaluatedSchema },
    atroposCheckpoint: { input: CheckpointInputSchema, answer: AtroposCheckpointSchema.extend(restored) },
    atroposMetrics: { input: StepInputSchema, answer: MetricsSchema },
  },
  messages: { ready: AtroposReadySchema, heartbeat: AtroposHeartbeatSchema },
} satisfies BoundaryContract;

/**
 * The Python worker's activities as workflows call them (`proxyActivities<AtroposActivities>`), typed from
 * {@link ATROPOS_BOUNDARY}. A collect always names its group's store key, so its kept groups come back as references.
 */
export type AtroposActivities = Omit<
  ActivitiesOf<typeof ATROPOS_BOUNDARY.activities>,
  'atroposDescribe' | 'atroposPostprocess' | 'atroposCollect'
> & {
  atroposCollect(input: z.infer<typeof AtroposCollectInputSchema>): Promise<AtroposCollected>;
};

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
