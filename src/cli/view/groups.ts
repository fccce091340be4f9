import type { GroupState } from '../../activities/group-state.js';
import { isMessagesOnly, MessageSchema, ToolDefinitionSchema, type Message } from '../../schema/scored-data.js';
import { z } from 'zod';
import type { RawGroup } from './model.js';
import { decodeSequence, lacksReply, type RunTokenizer } from '../decoded-tokens.js';

/**
 * A scored group as Atropos writes it, read loosely: a file from Atropos itself, or from an older Clotho, may lack
 * the optional fields or carry others. Only what the viewer shows must be there and well typed.
 */
const ScoredLineSchema = z.looseObject({
  messages_only: z.literal(false).optional(),
  tokens: z.array(z.array(z.number())),
  masks: z.array(z.array(z.number())),
  scores: z.array(z.number()),
  messages: z.array(z.array(MessageSchema)).nullish(),
  inference_logprobs: z.array(z.array(z.number())).nullish(),
  overrides: z.array(z.record(z.string(), z.unknown()).nullable()).nullish(),
  group_overrides: z.record(z.string(), z.unknown()).nullish(),
  tools: z.array(ToolDefinitionSchema).nullish(),
});

/** A messages-only group (`--env.messages_only`), read as loosely: no tokens, its counted completion tokens instead. */
const MessagesOnlyLineSchema = ScoredLineSchema.omit({ tokens: true, masks: true, inference_logprobs: true }).extend({
  messages_only: z.literal(true),
  completion_tokens: z.array(z.number()).nullish(),
});

/** A JSONL line (or a store's `group.json`) as a viewer group; throws with the first problem when it is not one. */
export function fromScored(value: unknown, parsed: unknown[] | null = null): RawGroup {
  if (isMessagesOnly(value)) return fromMessagesOnly(value, parsed);
  const result = ScoredLineSchema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new Error(`not a scored group: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const group = result.data;
  const n = group.scores.length;
  return {
    scores: group.scores,
    messages: Array.from({ length: n }, (_, i) => (group.messages?.[i] ?? []) as Message[]),
    tokens: group.tokens,
    masks: group.masks,
    logprobs: Array.from({ length: n }, (_, i) => group.inference_logprobs?.[i] ?? null),
    overrides: Array.from({ length: n }, (_, i) => group.overrides?.[i] ?? null),
    groupOverrides: group.group_overrides ?? null,
    tools: group.tools ?? null,
    parsed,
  };
}

/**
 * The groups an Atropos environment's `collect_trajectories` returned for one item, as one viewer group: the rollouts
 * of each in turn. What holds for a whole group (group overrides, tools) is the first one's.
 */
export function joinGroups(groups: RawGroup[]): RawGroup {
  const [first, ...rest] = groups;
  if (!first) throw new Error('no group to join');
  if (rest.length === 0) return first;
  return {
    ...first,
    scores: groups.flatMap((g) => g.scores),
    messages: groups.flatMap((g) => g.messages),
    tokens: groups.flatMap((g) => g.tokens),
    masks: groups.flatMap((g) => g.masks),
    logprobs: groups.flatMap((g) => g.logprobs),
    overrides: groups.flatMap((g) => g.overrides),
  };
}

function fromMessagesOnly(value: unknown, parsed: unknown[] | null): RawGroup {
  const result = MessagesOnlyLineSchema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new Error(`not a messages-only group: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const group = result.data;
  const n = group.scores.length;
  const none = Array.from({ length: n }, (): number[] => []);
  return {
    scores: group.scores,
    messages: Array.from({ length: n }, (_, i) => (group.messages?.[i] ?? []) as Message[]),
    tokens: none,
    masks: none,
    logprobs: none.map(() => null),
    overrides: Array.from({ length: n }, (_, i) => group.overrides?.[i] ?? null),
    groupOverrides: group.group_overrides ?? null,
    tools: group.tools ?? null,
    parsed,
    messagesOnly: true,
    completionTokens: group.completion_tokens ?? null,
  };
}

/**
 * A group that was never assembled (dropped, failed or still running) from its newest state in the store: the
 * trajectories as far as they got, with the scores Temporal knows (a dropped group's are all its mean) or none.
 */
export function fromState(state: GroupState, scores: number | null, parsed: unknown[] | null): RawGroup {
  const trajectories = state.trajectories;
  return {
    scores: trajectories.map(() => scores),
    messages: trajectories.map((t) => t.messages),
    tokens: trajectories.map((t) => t.tokens),
    masks: trajectories.map((t) => t.masks),
    logprobs: trajectories.map((t) => t.logprobs),
    overrides: trajectories.map((t) => (t.truncated === true ? { set_advantage_to_zero: true } : null)),
    groupOverrides: state.groupOverrides,
    tools: state.tools,
    parsed,
    ...(state.messagesOnly
      ? { messagesOnly: true, completionTokens: trajectories.some((t) => t.uncounted) ? null : trajectories.map((t) => t.completionTokens) }
      : {}),
  };
}

/** A group Temporal knows of but the store holds nothing for (it failed before its first record). */
export function emptyGroup(): RawGroup {
  return { scores: [], messages: [], tokens: [], masks: [], logprobs: [], overrides: [], groupOverrides: null, tools: null, parsed: null };
}

/**
 * A group whose rollouts' messages do not say what the model generated (an Atropos group of tokens only, as
 * gsm8k_server.py's under serve, or with the one user message Atropos makes of them under process), with messages
 * made of its tokens decoded by the run's tokenizer: the rendered prompt as the user's, the rest as the assistant's.
 * Unchanged, with no `decodedWith`, when every rollout has its reply or the tokenizer did not load (`problem`).
 */
export async function withDecodedReplies(
  group: RawGroup,
  tokenizerOf: () => Promise<RunTokenizer>,
): Promise<{ group: RawGroup; decodedWith?: string; problem?: string }> {
  const lacking = group.messages.map((messages, i) => !group.messagesOnly && (group.tokens[i]?.length ?? 0) > 0 && lacksReply(messages));
  if (!lacking.some(Boolean)) return { group };
  const run = await tokenizerOf();
  if ('problem' in run) return { group, problem: run.problem };
  const messages = group.messages.map((kept, i) => {
    if (!lacking[i]) return kept;
    const { prompt, reply } = decodeSequence(run.tokenizer, group.tokens[i]!, group.masks[i] ?? []);
    return [
      { role: 'user', content: prompt },
      { role: 'assistant', content: reply },
    ];
  });
  return { group: { ...group, messages }, decodedWith: run.tokenizer.name };
}
