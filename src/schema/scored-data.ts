import { z } from 'zod';
import { floatRows, intRows } from './number-rows.js';

/**
 * One chat message as Atropos accepts it: any role string and extra keys, but `role` and
 * `content` must be present (ATROPOS-API.md §2.1).
 */
export const MessageSchema = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(z.unknown()), z.null()]),
  reward: z.number().nullable().optional(),
});
export type Message = z.infer<typeof MessageSchema>;

const ints = z.array(z.number().int());
const floats = z.array(z.number());

/**
 * A scored group of rollouts of one item, with Atropos's exact 14 field names
 * (ATROPOS-API.md §2.1). Optional fields default to null so a serialised group always carries all keys.
 */
export const ScoredDataGroupSchema = z.object({
  tokens: z.array(ints),
  masks: z.array(ints),
  scores: floats,
  advantages: z.array(floats).nullable().default(null),
  ref_logprobs: z.array(floats).nullable().default(null),
  messages: z.array(z.array(MessageSchema)).nullable().default(null),
  generation_params: z.record(z.string(), z.unknown()).nullable().default(null),
  inference_logprobs: z.array(floats).nullable().default(null),
  overrides: z.array(z.record(z.string(), z.unknown())).nullable().default(null),
  group_overrides: z.record(z.string(), z.unknown()).nullable().default(null),
  images: z.unknown().nullable().default(null),
  env_id: z.number().int().nullable().default(null),
  distill_token_ids: z.array(z.array(ints)).nullable().default(null),
  distill_logprobs: z.array(z.array(floats)).nullable().default(null),
});
export type ScoredDataGroup = z.infer<typeof ScoredDataGroupSchema>;

/** One tool definition in OpenAI's `tools` list form (`{type: 'function', function: {name, description, parameters}}`). */
export const ToolDefinitionSchema = z.record(z.string(), z.unknown());
export type ToolDefinition = z.infer<typeof ToolDefinitionSchema>;

/**
 * Clotho's additions to a group as it writes one (trajectory store, `clotho process`'s JSONL), after Atropos's 14
 * fields. `tools`: the tool definitions the model was offered, the same for every sequence of the group (the chat
 * template rendered them into the prompt); present only when some were offered. Re-rendering `messages` with them
 * gives the prompt the model saw. Atropos's API and trainers ignore keys they do not know; Clotho's API keeps it in
 * the store and serves trainers Atropos's 14 fields.
 */
export const GROUP_ADDITIONS = {
  tools: z.array(ToolDefinitionSchema).nullish(),
};

/** A scored group as Clotho stores and writes it: {@link ScoredDataGroupSchema} and {@link GROUP_ADDITIONS}. */
export const WrittenGroupSchema = ScoredDataGroupSchema.extend(GROUP_ADDITIONS);
export type WrittenGroup = z.infer<typeof WrittenGroupSchema>;

/** A group's per-token rows checked by loops (`number-rows.ts`), to extend a group's schema with (`parseHotFirst`). */
export const HOT_ROWS = {
  tokens: intRows,
  masks: intRows,
  advantages: floatRows.nullable().default(null),
  ref_logprobs: floatRows.nullable().default(null),
  inference_logprobs: floatRows.nullable().default(null),
};

/** {@link ScoredDataGroupSchema} with its per-token rows checked by loops. */
export const HotScoredDataGroupSchema = ScoredDataGroupSchema.safeExtend(HOT_ROWS);

/** Field order of a serialised group, as Atropos's `ScoredData` declares it. */
export const SCORED_DATA_FIELDS = Object.keys(ScoredDataGroupSchema.shape) as (keyof ScoredDataGroup)[];

/** `masks` value for positions the trainer must not learn from (prompt, tool output). */
export const MASKED = -100;
/** `inference_logprobs` placeholder at masked positions: an impossible probability, as Atropos uses. */
export const MASKED_LOGPROB = 1.0;
