import { z } from 'zod';
import type { BatcherRoom, EnvRunProgress, GroupSink, StepOptions, StoreRef } from './rollout.js';

/**
 * What crosses the boundary between Clotho's workflows and the Python worker that serves a verifiers environment
 * (clients/python-verifiers, its worker's doc comment): the worker's ready line, the activities' payloads, the
 * records the session host keeps, and the workflows' inputs. A task's wire data is verifiers' (`TaskData` as JSON):
 * opaque to Clotho.
 */

/** The one JSON line the Python worker prints once it polls: its queue and the environment as verifiers built it. */
export const VerifiersReadySchema = z.strictObject({
  event: z.literal('ready'),
  taskQueue: z.string(),
  /** The identity Temporal records for the worker's activities (`pid@host`). */
  identity: z.string(),
  slots: z.number().int().positive(),
  /** verifiers' `EnvConfig.env_id` (`gsm8k`, `best-of-n+gsm8k`). */
  envId: z.string(),
  tasksetId: z.string(),
  /** Whether the run's view of the taskset ends; `tasks` is its size then. */
  bounded: z.boolean(),
  tasks: z.number().int().nonnegative().nullable(),
  /** `-r`: episodes per task, the group's size. */
  groupSize: z.number().int().positive(),
  /** `-c`: episodes in flight at once (null: no limit). */
  maxConcurrent: z.number().int().positive().nullable(),
  /** `-m`: the model name every call carries. */
  model: z.string(),
  /** Whether the command named the model (`-m`); without `--client.base-url`, Clotho's embedded engine serves it. */
  modelGiven: z.boolean(),
  /** verifiers' client config: where the policy is served (`given`: the command named it). */
  client: z.strictObject({ baseUrl: z.string(), given: z.boolean(), apiKeyVar: z.string() }),
  sampling: z.record(z.string(), z.unknown()),
  agents: z.array(z.strictObject({ name: z.string(), harness: z.string(), runtime: z.string() })),
  /** The run's config as verifiers parsed it: what the run records (client secrets left out). */
  config: z.record(z.string(), z.unknown()),
});
export type VerifiersReady = z.infer<typeof VerifiersReadySchema>;

/** A task as it travels: its wire data, or its key in the store when it was large. */
export type VerifiersTask = { data: Record<string, unknown> } | { ref: string };

/** What an episode came to (`outcome.py`): scored, or declined with verifiers' reason. */
export interface VerifiersEpisodeResult {
  status: 'scored' | 'declined';
  reason?: string;
  /** Model calls the attempt made, and how many of them were answered from the records. */
  calls: number;
  replayed: number;
}

/** The Python worker's activities, as workflows call them (`proxyActivities<VerifiersActivities>`). */
export interface VerifiersActivities {
  /** With `cycle`, positions past the view's end start it again (`serve`: epoch after epoch); it is never exhausted. */
  verifiersNextTasks(input: { cursor: number; count: number; cycle: boolean }): Promise<{ tasks: VerifiersTask[]; exhausted: boolean }>;
  verifiersEpisode(input: { itemIndex: number; sample: number; task: VerifiersTask }): Promise<VerifiersEpisodeResult>;
}

/** One trace of a finished episode, as the session host keeps it in the episode's result. */
export const VerifiersTraceSchema = z.looseObject({
  /** `<agent>-<n>`: the n-th trace the agent minted in the episode (stable across attempts). */
  key: z.string(),
  agent: z.string(),
  trainable: z.boolean(),
  /** Σ score · weight over its rewards (`Trace.reward`): the sequence's score. */
  reward: z.number(),
  rewards: z.record(z.string(), z.strictObject({ score: z.number(), weight: z.number() })),
  metrics: z.record(z.string(), z.number()),
  stop: z.string().nullable(),
  ok: z.boolean(),
  calls: z.number().int(),
});
export type VerifiersTrace = z.infer<typeof VerifiersTraceSchema>;

/** A finished episode (`…/verifiers/sample-<s>/result`): its outcome, its traces, and verifiers' own record of it. */
export const VerifiersResultSchema = z.looseObject({
  attempt: z.number().int().positive(),
  status: z.enum(['scored', 'declined']),
  reason: z.string().optional(),
  ok: z.boolean(),
  task: z.looseObject({ idx: z.number().int().nullable(), hash: z.string().nullable() }),
  traces: z.array(VerifiersTraceSchema),
  /** `Episode.to_record()`: what vf-eval writes to traces.jsonl. */
  episode: z.record(z.string(), z.unknown()),
});
export type VerifiersResult = z.infer<typeof VerifiersResultSchema>;

/** One group of a verifiers run: its task, fixed when the env-run takes it from the cursor. */
export interface VerifiersGroupInput {
  runId: string;
  environment: string;
  itemIndex: number;
  task: VerifiersTask;
  groupSize: number;
  taskQueues: { workflows: string; verifiers: string };
  steps: { episode: StepOptions; gather: StepOptions };
  /** The run's sampling as the group records it (`temperature`, `top_p`, `max_tokens`). */
  generationParams: Record<string, unknown>;
  policyVersion: number | null;
  /** Whether the server has Clotho's search attributes. */
  searchAttributes: boolean;
}

/** A finished group: its delivered group, or why none. */
export interface VerifiersGroupResult {
  itemIndex: number;
  status: 'scored' | 'declined';
  /** `verifiers:<why>` for a declined episode, `timeout` past the group's deadline. */
  reason?: string;
  group?: StoreRef;
  scores: number[];
  /** Each reward's score and each metric, averaged over the group's trainable traces (`reward/<name>`, `metric/<name>`). */
  metrics: Record<string, number>;
  /** Sequences the group delivers (its trainable traces). */
  size: number;
  longestSequence?: number;
  policyVersion: number | null;
}

/** A verifiers env-run's progress: Clotho's, with reasons of verifiers' own, and the cursor. */
export interface VerifiersProgress extends EnvRunProgress {
  dropped: Record<string, number>;
  /** Tasks taken from the run's view: the next `verifiersNextTasks` asks from this position. */
  cursor: number;
  /** Whether the view has no task after the cursor. */
  exhausted: boolean;
  /** Tasks taken and not yet started (a take answers up to the slots free). */
  pending: VerifiersTask[];
}

export interface VerifiersEnvRunInput {
  runId: string;
  environment: string;
  /** sha256 of the run config recorded from the worker's ready line (`<run>/<env>/run-config`). */
  configDigest: string;
  /** Groups to start: the view's size under `process` and `evaluate`. */
  totalGroups: number;
  maxInFlight: number;
  sink: Exclude<GroupSink, { kind: 'none' }>;
  groupSize: number;
  taskQueues: { workflows: string; verifiers: string };
  steps: { next: StepOptions; episode: StepOptions; gather: StepOptions; deliver: StepOptions };
  generationParams: Record<string, unknown>;
  searchAttributes: boolean;
  /** Under `serve`: the view is taken again from its start once it ends, epoch after epoch. */
  cycle?: boolean;
  progress?: VerifiersProgress;
  room?: BatcherRoom;
}
