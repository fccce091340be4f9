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
/** A chat message as OpenAI's API and Atropos's groups carry it (role, content, tool calls). */
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

/**
 * A group of a `--env.messages_only` run (`clotho process` against a server that returns messages only: OpenAI's API,
 * most hosted ones). It has no token ids, masks or logprobs, so it is no `ScoredDataGroup`: a trainer cannot learn
 * from it, and `clotho api` refuses it. What it has is what evaluation data and SFT from messages need: the scores,
 * the conversations, the tools offered, Atropos's overrides and the sampling. `completion_tokens` counts each
 * sequence's generated tokens as the server reported them (`usage.completion_tokens`), null when it did not for
 * every turn of every sequence.
 */
export const MessagesOnlyGroupSchema = z.strictObject({
  messages_only: z.literal(true),
  scores: floats,
  messages: z.array(z.array(MessageSchema)),
  completion_tokens: z.array(z.number().int().nonnegative()).nullable(),
  overrides: z.array(z.record(z.string(), z.unknown())).nullable(),
  group_overrides: z.record(z.string(), z.unknown()).nullable(),
  generation_params: z.record(z.string(), z.unknown()).nullable(),
  ...GROUP_ADDITIONS,
});
export type MessagesOnlyGroup = z.infer<typeof MessagesOnlyGroupSchema>;

/** A group as Clotho stores and writes it: a scored group, or a messages-only one. */
export type StoredGroup = WrittenGroup | MessagesOnlyGroup;

/** Whether a group (as parsed JSON) is a messages-only record. */
export function isMessagesOnly(group: unknown): group is MessagesOnlyGroup {
  return typeof group === 'object' && group !== null && (group as { messages_only?: unknown }).messages_only === true;
}

/** Why a messages-only group is not training data, for readers that need tokens. */
export const MESSAGES_ONLY_NOT_TRAINING =
  'a messages-only group (clotho process --env.messages_only) has no token ids, masks or logprobs, so it is no ' +
  'ScoredDataGroup and no trainer can learn from it';

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
