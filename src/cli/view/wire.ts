import type { FilteredGroup } from './filter.js';
import { contentText, goldOf, toolCallsOf, type GroupAddress, type RawGroup } from './model.js';
import type { PieceDecoder } from './tokens.js';

/** Where the Temporal UI is, for links to a group's workflow. */
export interface TemporalUi {
  base: string;
  namespace: string;
}

/** The rollout-group workflow of a group in the Temporal UI (its id is `clotho/<run>/<environment>/item-<i>`). */
export function workflowUrl(ui: TemporalUi, address: GroupAddress): string {
  const id = `clotho/${address.runId}/${address.environment}/item-${address.itemIndex}`;
  return `${ui.base.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(ui.namespace)}/workflows/${encodeURIComponent(id)}`;
}

/** The Temporal UI's list of a run's rollout groups. */
export function runWorkflowsUrl(ui: TemporalUi, runId: string): string {
  return `${ui.base.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(ui.namespace)}/workflows?query=${encodeURIComponent(`ClothoRunId = "${runId}"`)}`;
}

/** Minimum, maximum, mean and standard deviation of the scores a group has; null when it has none. */
export function spreadOf(scores: (number | null)[]) {
  const known = scores.filter((s): s is number => s !== null);
  if (known.length === 0) return null;
  const mean = known.reduce((a, b) => a + b, 0) / known.length;
  const std = Math.sqrt(known.reduce((a, s) => a + (s - mean) ** 2, 0) / known.length);
  return { min: Math.min(...known), max: Math.max(...known), mean, std };
}

/** A group of the list as the page gets it: its rollouts that pass the filter, all its scores for the spread. */
export function groupRow({ group, rollouts }: FilteredGroup, ui: TemporalUi) {
  const scores = group.rollouts.map((r) => r.score);
  return {
    id: group.id,
    label: group.label,
    environment: group.address?.environment ?? null,
    itemIndex: group.address?.itemIndex ?? null,
    runId: group.address?.runId ?? null,
    status: group.status,
    note: group.note,
    prompt: group.prompt,
    workflowUrl: group.address ? workflowUrl(ui, group.address) : null,
    scores,
    spread: spreadOf(scores),
    size: group.rollouts.length,
    rollouts: rollouts.map(({ text: _, ...rest }) => rest),
  };
}

/** Image parts of a message that the page can show: data URLs only, so that opening a rollout fetches nothing. */
function imagesOf(content: unknown): string[] {
  if (!Array.isArray(content)) return [];
  return content.flatMap((part: { type?: string; image_url?: { url?: string } | string }) => {
    const url = typeof part.image_url === 'string' ? part.image_url : part.image_url?.url;
    return part.type === 'image_url' && typeof url === 'string' && url.startsWith('data:image/') ? [url] : [];
  });
}

/** An offered tool as the page lists it: its name, description and parameters' JSON Schema (OpenAI's form, or flat). */
function toolSummary(tool: Record<string, unknown>) {
  const fn = (typeof tool.function === 'object' && tool.function !== null ? tool.function : tool) as Record<string, unknown>;
  return {
    name: typeof fn.name === 'string' ? fn.name : '?',
    description: typeof fn.description === 'string' ? fn.description : null,
    parameters: fn.parameters === undefined ? null : JSON.stringify(fn.parameters),
  };
}

/** One rollout in full: its messages turn by turn, its answer, its tokens with their logprobs and masks. */
export function rolloutDetail(group: RawGroup, sample: number, decode: PieceDecoder, tokenizer: string | null) {
  let turn = -1;
  const messages = (group.messages[sample] ?? []).map((m) => {
    if (m.role === 'assistant') turn++;
    return {
      role: m.role,
      // Turns count from 0, as the store's keys and the workflow's activities do; the prompt has none.
      turn: turn < 0 ? null : turn,
      text: contentText(m.content),
      images: imagesOf(m.content),
      toolCalls: toolCallsOf(m),
      name: typeof m.name === 'string' ? m.name : null,
      toolCallId: typeof m.tool_call_id === 'string' ? m.tool_call_id : null,
      reward: typeof m.reward === 'number' ? m.reward : null,
    };
  });
  const ids = group.tokens[sample] ?? [];
  const gold = goldOf(group);
  const parsed = group.parsed === null || group.parsed[sample] === undefined ? null : { value: group.parsed[sample] };
  return {
    sample,
    score: group.scores[sample] ?? null,
    rewards: messages.flatMap((m) => (m.role === 'assistant' && m.reward !== null ? [m.reward] : [])),
    truncated: group.overrides[sample]?.set_advantage_to_zero === true,
    parsed,
    gold: gold ?? null,
    messages,
    tools: (group.tools ?? []).map(toolSummary),
    tokens: { ids, masks: group.masks[sample] ?? [], logprobs: group.logprobs[sample] ?? null, pieces: decode(ids), tokenizer },
    // A messages-only rollout has no tokens to show: the page says so, with the completion tokens the server counted.
    messagesOnly: group.messagesOnly === true ? { completionTokens: group.completionTokens?.[sample] ?? null } : null,
    // A harness rollout's model calls, each replayed or live, and how the episode went; null for any other rollout.
    harness: group.harness?.[sample] ?? null,
  };
}
