import { parseToolCalls } from '../../inference/tool-calls.js';
import type { Message, ToolDefinition } from '../../schema/scored-data.js';
import type { HarnessSample } from './harness.js';

/**
 * Where a group stands: `scored` (delivered), `dropped` (all scores equal, by `ensure_scores_are_not_same`), `failed`
 * (its workflow failed, was terminated or timed out), `running`, or `unknown` (not delivered, and Temporal was not
 * there to say why).
 */
export type GroupStatus = 'scored' | 'dropped' | 'failed' | 'running' | 'unknown';
export const GROUP_STATUSES: readonly GroupStatus[] = ['scored', 'dropped', 'failed', 'running', 'unknown'];

/**
 * One group as the viewer reads it from any source: Atropos's parallel arrays, one entry per rollout, with what
 * Clotho keeps beside them (parsed answers, the workflow's status). Scores are null when the group was never scored.
 */
export interface RawGroup {
  scores: (number | null)[];
  messages: Message[][];
  tokens: number[][];
  masks: number[][];
  /** Per rollout: the inference logprob of each position (MASKED_LOGPROB where masked), or null when not recorded. */
  logprobs: (number[] | null)[];
  /** Atropos's per-rollout overrides (`set_advantage_to_zero` marks a truncated episode). */
  overrides: (Record<string, unknown> | null)[];
  groupOverrides: Record<string, unknown> | null;
  /** The tool definitions the model was offered (OpenAI `tools` list form), the same for every rollout; null when none or not recorded. */
  tools: ToolDefinition[] | null;
  /** The environment's parsed answer per rollout (`parsed.json` beside the group); null when not recorded. */
  parsed: unknown[] | null;
  /** A messages-only group (`--env.messages_only`): no tokens, masks or logprobs were recorded. */
  messagesOnly?: boolean;
  /** A messages-only group's completion tokens per rollout, as the server counted them; null when it did not. */
  completionTokens?: number[] | null;
  /**
   * A harness group's rollouts (an agent program each): their model calls and outcomes, null for a rollout the store
   * holds nothing of. Read only for a rollout opened in full, never for the list.
   */
  harness?: (HarnessSample | null)[];
}

/** Where a group sits in a Clotho run: what its Temporal workflow id derives from. */
export interface GroupAddress {
  runId: string;
  environment: string;
  itemIndex: number;
}

/** A rollout's facts for the list and the filters; `text` is what a text search looks in (lower case). */
export interface RolloutSummary {
  sample: number;
  score: number | null;
  /** Assistant turns. */
  turns: number;
  toolCalls: number;
  /** Tokens of the sequence; for a messages-only rollout, the completion tokens the server counted (null: not reported). */
  tokens: number | null;
  /** A rollout of a messages-only group: no tokens recorded. */
  messagesOnly: boolean;
  /** Positions the trainer learns from (mask not -100). */
  trained: number;
  /** The per-turn rewards the environment's step gave (assistant messages' `reward`). */
  rewards: number[];
  truncated: boolean;
  /** The start of the last assistant message. */
  preview: string;
  text: string;
}

/** A group's facts for the list. */
export interface GroupSummary {
  /** Unique within its run: `<environment>/item-<i>` for a store's groups, `line-<n>` for a JSONL's. */
  id: string;
  label: string;
  address: GroupAddress | null;
  status: GroupStatus;
  /** Why a group is not scored (the failure's cause), or where a JSONL line came from. */
  note: string | null;
  /** The start of the first user message. */
  prompt: string;
  rollouts: RolloutSummary[];
}

/** The text of a message's content; parts other than text show as a placeholder. */
export function contentText(content: Message['content']): string {
  if (typeof content === 'string') return content;
  if (content === null) return '';
  return content
    .map((part) => {
      const p = part as { type?: string; text?: string };
      return p.type === 'text' && typeof p.text === 'string' ? p.text : `[${p.type ?? 'part'}]`;
    })
    .join('\n');
}

/** The tool calls an assistant message makes: OpenAI `tool_calls`, or Hermes `<tool_call>` blocks in its text. */
export function toolCallsOf(message: Message): { name: string; arguments: string }[] {
  if (message.role !== 'assistant') return [];
  const { calls, malformed } = parseToolCalls(message);
  return [
    ...calls.map((c) => ({ name: c.name, arguments: JSON.stringify(c.arguments) })),
    ...malformed.map((m) => ({ name: '(malformed)', arguments: `${m.text} — ${m.error}` })),
  ];
}

const clip = (text: string, length: number) => (text.length > length ? `${text.slice(0, length - 1)}…` : text);

/** Summarises rollout `sample` of a group. */
export function summariseRollout(group: RawGroup, sample: number): RolloutSummary {
  const messages = group.messages[sample] ?? [];
  const assistants = messages.filter((m) => m.role === 'assistant');
  const calls = assistants.flatMap(toolCallsOf);
  const masks = group.masks[sample] ?? [];
  const parsed = group.parsed?.[sample];
  const text = [
    ...messages.map((m) => contentText(m.content)),
    ...calls.map((c) => `${c.name}(${c.arguments})`),
    parsed === undefined ? '' : JSON.stringify(parsed),
  ].join('\n');
  return {
    sample,
    score: group.scores[sample] ?? null,
    turns: assistants.length,
    toolCalls: Math.max(calls.length, messages.filter((m) => m.role === 'tool').length),
    tokens: group.messagesOnly ? (group.completionTokens?.[sample] ?? null) : (group.tokens[sample]?.length ?? 0),
    messagesOnly: group.messagesOnly === true,
    trained: masks.filter((m) => m !== -100).length,
    rewards: assistants.flatMap((m) => (typeof m.reward === 'number' ? [m.reward] : [])),
    truncated: group.overrides[sample]?.set_advantage_to_zero === true,
    preview: clip(contentText(assistants.at(-1)?.content ?? null).trim(), 160),
    text: text.toLowerCase(),
  };
}

/** Summarises a group read from any source. */
export function summariseGroup(
  group: RawGroup,
  where: { id: string; label: string; address: GroupAddress | null; status: GroupStatus; note?: string | null },
): GroupSummary {
  const first = group.messages[0] ?? [];
  const user = first.find((m) => m.role === 'user') ?? first[0];
  return {
    id: where.id,
    label: where.label,
    address: where.address,
    status: where.status,
    note: where.note ?? null,
    prompt: clip(contentText(user?.content ?? null).trim(), 200),
    rollouts: group.scores.map((_, sample) => summariseRollout(group, sample)),
  };
}

/** Keys under which environments record a gold answer, in the group's overrides or on a message. */
const GOLD_KEYS = ['gold', 'gold_answer', 'ground_truth', 'expected_answer', 'reference_answer', 'answer', 'target'];

/** The gold answer a group carries in its `group_overrides` or on one of its messages; undefined when not recorded. */
export function goldOf(group: RawGroup): { value: unknown; from: string } | undefined {
  for (const key of GOLD_KEYS) {
    if (group.groupOverrides && key in group.groupOverrides) return { value: group.groupOverrides[key], from: `group_overrides.${key}` };
  }
  for (const message of group.messages[0] ?? []) {
    for (const key of GOLD_KEYS)
      if (key in message && key !== 'content') return { value: message[key], from: `${message.role} message's "${key}"` };
  }
  return undefined;
}
