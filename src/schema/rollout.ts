import { z } from 'zod';

/**
 * Types that cross the workflow boundary. They carry references into the trajectory store and
 * scalars only (DESIGN.md, claim-check rule), and are plain JSON so continue-as-new keeps their shape.
 */

/** A key in the trajectory store. */
export const StoreRefSchema = z.object({ key: z.string() });
export type StoreRef = z.infer<typeof StoreRefSchema>;

/** Retry and timeout settings of one workflow step, in milliseconds. */
export const StepOptionsSchema = z.object({
  startToCloseTimeoutMs: z.number().int().positive(),
  heartbeatTimeoutMs: z.number().int().positive().optional(),
  initialIntervalMs: z.number().int().positive(),
  backoffCoefficient: z.number().min(1),
  maximumIntervalMs: z.number().int().positive(),
  maximumAttempts: z.number().int().min(0),
  /** Run as a local activity in the workflow's worker: no task-queue round trip, for cheap steps. */
  local: z.boolean(),
});
export type StepOptions = z.infer<typeof StepOptionsSchema>;

export const STEP_NAMES = [
  'prepare',
  'setup',
  'generate',
  'tool',
  'harness',
  'step',
  'parse',
  'judge',
  'score',
  'teacher',
  'assemble',
  'teardown',
  'deliver',
] as const;
export type StepName = (typeof STEP_NAMES)[number];
export type StepOptionsTable = Record<StepName, StepOptions>;

/** Why a group was not delivered. Every drop is counted under one of these. */
export const DROP_REASONS = ['scores_all_equal', 'too_long', 'timeout'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

/** Task queues of the activities (DESIGN.md "Task queues"); workflows run on the queue they were started on. */
export interface TaskQueues {
  llm: string;
  env: string;
}

/** Reasoning effort levels Atropos accepts (`reasoning_effort`). */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

/**
 * Reasoning asked of the model (Atropos's ReasoningConfig): present means enabled. Atropos sends one of effort and
 * a token budget, effort first.
 */
export interface Reasoning {
  effort?: ReasoningEffort;
  maxTokens?: number;
}

/** Sampling of training rollouts; in the workflow input so every rollout shows how it was sampled. */
export interface Sampling {
  temperature: number;
  topP: number;
  /** Absent in runs started before reasoning requests existed, and when reasoning is off. */
  reasoning?: Reasoning;
}

/** Everything a rollout-group workflow needs, fixed when the env-run starts it. */
export interface RolloutGroupInput {
  runId: string;
  environment: string;
  itemIndex: number;
  groupSize: number;
  /** Turns of generate ↔ step at most (1 = single-turn). */
  maxTurns: number;
  /** Completion tokens a trajectory may generate over all its turns (Atropos's max_token_length). */
  maxTokenLength: number;
  sampling: Sampling;
  ensureScoresAreNotSame: boolean;
  /** Top-k of teacher logprobs; null when the teacher step is off. */
  teacherTopK: number | null;
  taskQueues: TaskQueues;
  steps: StepOptionsTable;
  /** Whether the server has Clotho's search attributes (a foreign cluster may not). */
  searchAttributes: boolean;
  /**
   * The trainer's step when the group started: the policy that generates it, unless the inference server reports the
   * version of its weights (then the group's result says that). Null outside training runs.
   */
  policyVersion?: number | null;
  /** Which of the environment's group hooks run (absent in runs started before hooks existed: none). */
  hooks?: { setup: boolean; teardown: boolean };
  /** Whether the environment asks a judge model about each group (its `judge` hook) before scoring it. */
  judged?: boolean;
  /**
   * Each turn one local activity when generation, tools and step run local (`takeTurn`, issue 25); absent in groups of
   * runs started before it, which replay as they ran.
   */
  oneActivityPerTurn?: boolean;
  /**
   * The environment runs each rollout through an agent program (its `harness`, issue 27): one `runHarness` activity per
   * sample, then parse and score. Absent in groups of other environments and of runs started before harnesses.
   */
  harness?: boolean;
}

/** The small result of a rollout group: a reference to the full group plus what the driver counts. */
export interface RolloutGroupResult {
  itemIndex: number;
  status: 'scored' | 'dropped';
  dropReason?: DropReason;
  group?: StoreRef;
  scores: number[];
  meanScore: number;
  groupSize: number;
  tokens: number;
  /** Tokens of the longest sequence (the trainer drops groups at or above its max_token_len). */
  longestSequence?: number;
  turns: number;
  /**
   * The policy that generated the group: the oldest weights version among its completions when the server reports
   * versions (`clotho inference`), else the one the group was started with (its input's).
   */
  policyVersion?: number | null;
  /** Tool calls executed over the group's trajectories. */
  toolCalls?: number;
  /** The environment's metrics (and tool-call counts), each averaged over the group's trajectories. */
  metrics?: Record<string, number>;
}

/**
 * How long an env-run under `serve` waits before it asks a source that had no item again (Atropos's `get_next_item`
 * returning None): `initialMs`, doubling after each empty answer up to `maximumMs`.
 */
export interface ItemWait {
  initialMs: number;
  maximumMs: number;
}

/** `serve`'s wait for items: 1 s, doubling to a minute. */
export const SERVE_ITEM_WAIT: ItemWait = { initialMs: 1000, maximumMs: 60_000 };

/** Where an env-run hands its finished groups. */
export type GroupSink =
  | { kind: 'jsonl'; path: string }
  | {
      kind: 'batcher';
      workflowId: string;
      envId: number;
      /** Groups wait in the batcher for at most this many batches (Atropos's max_batches_offpolicy). */
      maxBatchesOffpolicy: number;
      /** New groups stop once the trainer reaches this step (its num_steps). */
      stopAtStep: number;
    }
  | { kind: 'none' };

export interface EnvRunInput {
  runId: string;
  environment: string;
  /**
   * sha256 of the environment config the run carries, whose value is in the trajectory store at
   * `<run>/<env>/run-config`: every worker of the run serves it (src/config/run-config.ts). Absent in older runs.
   */
  configDigest?: string;
  /** Groups to produce; items are 0 … totalGroups-1 (the environment maps an index to its data). */
  totalGroups: number;
  maxInFlight: number;
  sink: GroupSink;
  group: Omit<RolloutGroupInput, 'runId' | 'environment' | 'itemIndex'>;
  /**
   * Seconds a rollout group may run before it is given up and counted as dropped (`timeout`): Atropos's
   * worker_timeout. Absent (runs started before it existed, or worker_timeout ≤ 0): no deadline.
   */
  groupTimeoutSeconds?: number;
  /** Progress carried across continue-as-new. */
  progress?: EnvRunProgress;
  /** The batcher's last pushed room, carried across continue-as-new. */
  room?: BatcherRoom;
  /** Evaluation during training (Atropos's steps_per_eval); only with a batcher sink. Absent: none. */
  evaluation?: EvalSchedule;
}

/** Atropos's `eval_handling`: what training does while an evaluation runs. */
export type EvalHandling = 'STOP_TRAIN' | 'LIMIT_TRAIN' | 'NONE';

/** When an env-run evaluates, and how (Atropos's `steps_per_eval`, `eval_handling`, `eval_limit_ratio`). */
export interface EvalSchedule {
  /** An evaluation starts whenever the trainer's step crosses a multiple of this (> 0). */
  everySteps: number;
  handling: EvalHandling;
  /** With LIMIT_TRAIN, the share of `maxInFlight` training groups kept running during an evaluation. */
  limitRatio: number;
  /** What each evaluation is given, less its step. */
  run: Omit<EvaluationInput, 'step'>;
}

/** An evaluation of the policy at one trainer step: `clotho evaluate`'s pass, as a child of the env-run. */
export interface EvaluationInput {
  runId: string;
  environment: string;
  step: number;
  /** Items 0 … items-1 (fewer when the environment has fewer); ignored by an environment's own `evaluate`. */
  items: number;
  maxTurns: number;
  /** Items evaluated at once (Atropos's max_eval_workers). */
  concurrency: number;
  /** The LLM task queue: evaluation is inference, on the eval slots of the run's servers. */
  taskQueue: string;
  activity: StepOptions;
  /** Atropos's data_dir_to_save_evals, absolute: each evaluation writes metrics.json and samples.jsonl in `step-<n>/`. */
  saveDir?: string;
}

/** What an evaluation found: the environment's metrics (`items`, `score`, its own) at the step it started. */
export interface EvaluationResult {
  step: number;
  metrics: Record<string, number>;
  /** Atropos's `eval/percent_correct`: max(score, 0) averaged over the items; null for an environment's own evaluate. */
  percentCorrect: number | null;
}

/** An env-run's evaluations so far, carried across continue-as-new. */
export interface EvalProgress {
  /** The trainer's step last seen; null before the batcher's first push. */
  seenStep: number | null;
  /** The step of the evaluation running now, or null. */
  running: number | null;
  started: number;
  /** Steps that would have started one while another still ran (Atropos skips them too, with a warning). */
  skipped: number;
  failed: number;
  /** The newest finished evaluations, oldest first (a few kept; the child workflows keep every one). */
  results: EvaluationResult[];
  /** Why the last failed evaluation failed. */
  lastFailure?: { step: number; message: string };
}

/** How much room an environment has in the batcher, as the batcher pushes it to the env-runs that watch it. */
export interface BatcherRoom {
  /** Increases with every push, so a late signal never overwrites a newer reading. */
  version: number;
  currentStep: number;
  batchSize: number;
  /** This env's groups waiting in the batcher's queue. */
  queuedGroups: number;
  /** This env's groups the batcher has taken in so far (duplicates included). */
  receivedGroups: number;
  /**
   * This env's share of the room, Atropos's `env_weight` (`/status-env`): its weight × max token length over the
   * connected envs', at least 0.01. Absent from batchers that predate weights: the whole room.
   */
  share?: number;
}

export interface EnvRunProgress {
  nextItem: number;
  completed: number;
  delivered: number;
  failed: number;
  dropped: Partial<Record<DropReason, number>>;
  failures: { itemIndex: number; message: string }[];
  scoreSum: number;
  scoredGroups: number;
  /** Each metric summed over scored groups (a group contributes its mean): divide by `scoredGroups`. */
  metricSums?: Record<string, number>;
  /** Present when the run evaluates during training (`EnvRunInput.evaluation`). */
  evaluation?: EvalProgress;
  /** What the environment's own logging last reported (an Atropos class's `wandb_log`), newest value of each. */
  logged?: { step: number | null; metrics: Record<string, number> };
}

export type EnvRunResult = EnvRunProgress;

/** What an env-run answers when asked how far it is (its `envRunStatus` query). */
export interface EnvRunStatus extends EnvRunProgress {
  total: number;
  inFlight: number;
}
