import { z } from 'zod';
import { GROUP_ADDITIONS, ScoredDataGroupSchema, type ScoredDataGroup } from './scored-data.js';

/**
 * Request and response bodies of the Atropos-compatible trajectory API (ATROPOS-API.md §1.3), plus
 * Clotho's optional additions (leases, acks, idempotency keys, policy versions). Atropos's request
 * models are pydantic models with default settings, so unknown keys are ignored, not rejected.
 */

const int = z.number().int();

/**
 * `POST /register`: the trainer announces itself. All fields are required, as in Atropos; the wandb fields may be
 * null, which Axolotl's Atropos plugin sends when no W&B project is configured (`/wandb_info` then answers null).
 */
export const TrainerRegistrationSchema = z.object({
  wandb_group: z.string().nullable(),
  wandb_project: z.string().nullable(),
  batch_size: int,
  max_token_len: int,
  checkpoint_dir: z.string(),
  save_checkpoint_interval: int,
  starting_step: int,
  num_steps: int,
});
export type TrainerRegistration = z.infer<typeof TrainerRegistrationSchema>;

/** `POST /register`'s answer. `uuid` is a uuid4 as a 128-bit integer, written as raw JSON digits. */
export const RegisterResponseSchema = z.object({ uuid: z.string().regex(/^\d+$/) });

/** `POST /register-env`: an environment announces itself (and the batcher's `registerEnv` update takes the same). */
export const EnvRegistrationSchema = z.object({
  max_token_length: int,
  desired_name: z.string(),
  weight: z.number(),
  group_size: int,
  min_batch_allocation: z.number().nullable().default(null),
  /**
   * Clotho's addition: the env-run that feeds this registration (`clotho serve` sends it). Registering again with
   * the same key is a restart of the same run: it gets its env id back instead of a second registration.
   */
  run_key: z.string().min(1).optional(),
});
export type EnvRegistration = z.infer<typeof EnvRegistrationSchema>;

/** `POST /register-env`'s answer: wait until the trainer's first `/batch`, then the env's id and run settings. */
export const RegisterEnvResponseSchema = z.union([
  z.object({ status: z.literal('wait for trainer to start') }),
  z.object({
    status: z.literal('success'),
    env_id: int,
    wandb_name: z.string(),
    checkpoint_dir: z.string(),
    starting_step: int,
    checkpoint_interval: int,
    num_steps: int,
  }),
]);
export type RegisterEnvResponse = z.infer<typeof RegisterEnvResponseSchema>;

/** Body of `POST /disconnect-env` and of the JSON-body `GET /status-env`. */
export const EnvIdSchema = z.object({ env_id: int });

/** `POST /disconnect-env`'s answer; it only marks the env disconnected. */
export const DisconnectEnvResponseSchema = z.union([
  z.object({ status: z.literal('success') }),
  z.object({ status: z.literal('failure'), error: z.string() }),
]);
export type DisconnectEnvResponse = z.infer<typeof DisconnectEnvResponseSchema>;

/** `GET /wandb_info`: the trainer's wandb group and project, null before it registered. */
export const WandbInfoSchema = z.object({ group: z.string().nullable(), project: z.string().nullable() });
export type WandbInfo = z.infer<typeof WandbInfoSchema>;

/** `GET /info`: `-1, -1` before a trainer registered. */
export const InfoSchema = z.object({ batch_size: int, max_token_len: int });
export type Info = z.infer<typeof InfoSchema>;

/** `GET /status`: `0, 0` before a trainer registered. */
export const StatusSchema = z.object({ current_step: int, queue_size: int });
export type Status = z.infer<typeof StatusSchema>;

/** `GET /status-env` (ATROPOS-API.md §1.6). */
export const StatusEnvSchema = z.object({
  current_step: int,
  queue_size: int,
  unallocated_fraction: z.number(),
  self_queue_size: int,
  max_group_size: int,
  env_weight: z.number(),
});
export type StatusEnv = z.infer<typeof StatusEnvSchema>;

/** `GET /batch?lease_seconds=N` (addition): lease the batch; it returns to the queue unless acked in time. */
export const BatchQuerySchema = z.object({ lease_seconds: z.coerce.number().positive().finite().optional() });

/**
 * `GET /batch` and `GET /batch/{id}`. `batch_id` and `lease_expires_at` (seconds since the Unix
 * epoch) appear only for leased batches and batches fetched by id, so old trainers never see them.
 * A leased batch's `batch_id` is the id of that lease: a batch served again after its lease ran out
 * comes with another one. `GET /batch/{id}` takes a lease id or the batch's own id.
 */
export const BatchResponseSchema = z.union([
  z.object({ status: z.literal('error'), message: z.string(), batch: z.array(z.never()) }),
  z.object({
    batch: z.array(ScoredDataGroupSchema).nullable(),
    batch_id: z.string().optional(),
    lease_expires_at: z.number().optional(),
  }),
]);

/**
 * `POST /batch/renew` (addition): hold these leases `lease_seconds` more from now. A trainer that acks only at a
 * checkpoint renews every lease it holds, so none runs out first. An empty list renews nothing and tells a trainer that
 * the API renews leases (Atropos's has no such route: 404).
 */
export const BatchRenewSchema = z.object({
  batch_ids: z.array(z.string().min(1)).max(10_000),
  lease_seconds: z.number().positive().finite(),
});
/** `POST /batch/renew`'s answer: per lease, in order, `renewed` until `lease_expires_at`, or `expired` or `unknown`. */
export const BatchRenewResponseSchema = z.object({
  leases: z.array(
    z.object({
      batch_id: z.string(),
      status: z.enum(['renewed', 'expired', 'unknown']),
      lease_expires_at: z.number().nullable(),
    }),
  ),
});
export type BatchRenewResponse = z.infer<typeof BatchRenewResponseSchema>;

/** `POST /batch/ack` (addition): the trainer has durably consumed a leased batch; `batch_id` is the lease's. */
export const BatchAckSchema = z.object({ batch_id: z.string().min(1) });
/**
 * `POST /batch/ack`'s answer: 404 for an unknown id, 409 (changing nothing) when the lease had run out or the
 * batch was served again under a newer lease.
 */
export const BatchAckResponseSchema = z.union([
  z.object({ status: z.literal('success') }),
  z.object({ status: z.literal('failure'), error: z.string() }),
]);

/** Clotho's optional per-group additions to Atropos's `ScoredData`. */
const groupAdditions = {
  /** A group posted again with a key already seen is acknowledged and ignored. */
  idempotency_key: z.string().min(1).max(256).optional(),
  /** The policy (trainer step) that generated the group, for staleness checks. */
  policy_version: int.nonnegative().optional(),
  /** The tools the model was offered ({@link GROUP_ADDITIONS}): kept in the store, not served to trainers. */
  tools: GROUP_ADDITIONS.tools,
};

/**
 * A message as Atropos's API takes it (`Dict[str, Any]` with `role` and `content` present): any values, any other
 * keys. An object `content` or a non-string `role` is unusual and is counted on `/metrics`, not refused.
 */
export const PostedMessageSchema = z.looseObject({ role: z.unknown(), content: z.unknown() });

/**
 * Per-sequence fields whose rows must match `tokens` row for row, token for token: Atropos's trainer reads them
 * position by position, so a misaligned row would train on the wrong tokens. (`advantages` and `ref_logprobs`,
 * which Atropos accepts misaligned and its trainer ignores, are only counted; see `src/api/irregular.ts`.)
 */
const PER_TOKEN_FIELDS = ['masks', 'inference_logprobs'] as const;

/**
 * Rejects groups a trainer cannot use: Atropos checks nothing, and its trainer then fails on the batch (fewer
 * scores than sequences) or trains on misaligned positions (masks, inference logprobs).
 */
function checkAlignment(group: Pick<ScoredDataGroup, 'tokens' | 'scores' | (typeof PER_TOKEN_FIELDS)[number]>, ctx: z.RefinementCtx): void {
  const n = group.tokens.length;
  if (n === 0) ctx.addIssue({ code: 'custom', path: ['tokens'], message: 'a group needs at least one sequence' });
  if (group.scores.length !== n) {
    ctx.addIssue({ code: 'custom', path: ['scores'], message: `expected ${n} scores (one per sequence), got ${group.scores.length}` });
  }
  for (const field of PER_TOKEN_FIELDS) {
    const rows = group[field];
    if (rows === null) continue;
    if (rows.length !== n) {
      ctx.addIssue({ code: 'custom', path: [field], message: `expected ${n} sequences as in tokens, got ${rows.length}` });
      continue;
    }
    rows.forEach((row, i) => {
      const want = group.tokens[i]?.length ?? 0;
      if (row.length !== want) {
        ctx.addIssue({ code: 'custom', path: [field, i], message: `expected ${want} values as in tokens[${i}], got ${row.length}` });
      }
    });
  }
}

/**
 * Body of `POST /scored_data`: an Atropos `ScoredData` plus the optional additions, shapes checked. Messages are
 * taken as Atropos takes them ({@link PostedMessageSchema}) and served back as posted.
 */
export const ScoredDataPostSchema = ScoredDataGroupSchema.extend({
  ...groupAdditions,
  messages: z.array(z.array(PostedMessageSchema)).nullable().default(null),
}).superRefine(checkAlignment);
export type ScoredDataPost = z.infer<typeof ScoredDataPostSchema>;

/** Body of `POST /scored_data_list`. */
export const ScoredDataListPostSchema = z.array(ScoredDataPostSchema);

/**
 * What happened to one posted group. `received` and `buffered` are Atropos's; `duplicate` (a repeated
 * idempotency key) and `dropped` (e.g. a stale policy version) only answer clients that sent those fields.
 */
export const IngestResultSchema = z.union([
  z.object({ status: z.literal('received'), duplicate: z.literal(true).optional() }),
  z.object({ status: z.literal('buffered'), buffer_size: int }),
  z.object({ status: z.literal('dropped'), reason: z.string() }),
]);
export type IngestResult = z.infer<typeof IngestResultSchema>;

/** `POST /scored_data_list`'s answer; the counters beyond `groups_processed` appear only when non-zero. */
export const ScoredDataListResponseSchema = z.object({
  status: z.literal('received'),
  groups_processed: int,
  buffered: int.optional(),
  last_buffer_size: int.optional(),
  duplicates: int.optional(),
  dropped: int.optional(),
});
export type ScoredDataListResponse = z.infer<typeof ScoredDataListResponseSchema>;

/** `GET /latest_example` before any group was queued: Atropos's placeholder, nine empty lists. */
export const EMPTY_EXAMPLE = {
  tokens: [],
  masks: [],
  scores: [],
  advantages: [],
  ref_logprobs: [],
  generation_params: [],
  inference_logprobs: [],
  messages: [],
  images: [],
} as const;

const counts = z.record(z.string(), z.number().int().nonnegative());

/** Counters of one registered environment. */
export const EnvMetricsSchema = z.object({
  /** The environment's `wandb_name`, used as the `env` label. */
  env: z.string(),
  envId: int,
  groupsReceived: int,
  groupsBuffered: int,
  groupsDropped: counts,
  queueDepth: int,
});

/** What `GET /metrics` renders. Totals include groups posted without an `env_id`. */
export const MetricsSnapshotSchema = z.object({
  currentStep: int,
  /** Groups accepted by `/scored_data(_list)`; duplicates of a seen idempotency key are not counted. */
  groupsReceived: int,
  /** Groups answered `buffered`: held back to merge up to their env's group size. */
  groupsBuffered: int,
  /** Groups not delivered, by reason (`scores_all_equal`, `stale`, ...). */
  groupsDropped: counts,
  batchesFormed: int,
  /** Batches handed to a trainer (a batch re-served after an expired lease counts again). */
  batchesServed: int,
  /** Groups waiting in the queue. */
  queueDepth: int,
  /** Posts of scored groups answered 503 because the queue was full, by this API process since it started. */
  postsRefused: int,
  /** Groups in those posts. */
  groupsRefused: int,
  /** Leases that ran out before their ack: each such batch is served again, and a trainer may train it twice. */
  leasesExpired: int,
  /** Leases renewed by their trainers (`POST /batch/renew`). */
  leasesRenewed: int,
  /** Training runs this one superseded that could not be told to end (`clotho api` logs each, naming it). */
  supersessionErrors: int,
  envs: z.array(EnvMetricsSchema),
});
export type MetricsSnapshot = z.infer<typeof MetricsSnapshotSchema>;
