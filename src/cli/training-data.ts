import { seededRandom as sdkSeededRandom } from '../env/random.js';
import type { Message, ScoredDataGroup, ToolDefinition } from '../schema/scored-data.js';

/**
 * How `clotho sft-gen` and `clotho dpo-gen` turn scored groups into training records, with the selection rules of
 * Atropos's `atropos-sft-gen` and `atropos-dpo-gen`. The sequences of a group are seen either as text (decoded tokens
 * split into the prefix they all share and each one's completion) or as chat messages.
 */

/** A group's sequences as the records carry them. */
export type GroupView =
  { kind: 'text'; prefix: string; completions: string[] } | { kind: 'messages'; messages: Message[][]; tools: ToolDefinition[] | null };

/** A sequence of a group with its score, in the group's order. */
interface Scored {
  index: number;
  score: number;
}

/** Filters shared by both selections. */
export interface ScoreFilter {
  /** Keep sequences whose score is 0 or less (as positives, for DPO). @default false */
  allowNegativeScores: boolean;
  /** SFT: a sequence must beat the group's lowest score by more than this; DPO: a pair's scores must differ by more. */
  minimumScoreDiff: number;
}

/** The tools the model was offered, beside a record's messages when it had any (TRL's conversational `tools` column). */
type OfferedTools = { tools?: ToolDefinition[] };

/** `{prefix, completion, score}` (text) or `{messages, score, tools?}`. */
export type SftRecord = { prefix: string; completion: string; score: number } | ({ messages: Message[]; score: number } & OfferedTools);

/** `{prefix, pos, score, neg}` (text) or `{pos, score, neg, tools?}` (messages): the chosen and the rejected sequence. */
export type DpoRecord =
  { prefix: string; pos: string; score: number; neg: string } | ({ pos: Message[]; score: number; neg: Message[] } & OfferedTools);

/** The longest prefix all texts share, cut at whole code points (never inside a surrogate pair). */
export function commonPrefix(texts: readonly string[]): string {
  if (texts.length === 0) return '';
  let prefix = Array.from(texts[0]!);
  for (const text of texts.slice(1)) {
    const points = Array.from(text);
    let n = 0;
    while (n < prefix.length && n < points.length && prefix[n] === points[n]) n++;
    prefix = prefix.slice(0, n);
  }
  return prefix.join('');
}

/** Sequences as text: what they share (the prompt, as a rule) and what each one adds. */
export function textView(texts: readonly string[]): GroupView {
  const prefix = commonPrefix(texts);
  return { kind: 'text', prefix, completions: texts.map((text) => text.slice(prefix.length)) };
}

/**
 * Sequences as their messages, with the tools offered when the group records them (without them, a tool-using
 * conversation re-renders as a prompt the model never saw); a group posted without messages cannot be seen this way.
 */
export function messagesView(group: Pick<ScoredDataGroup, 'messages' | 'scores'> & { tools?: ToolDefinition[] | null }): GroupView {
  if (!group.messages) {
    throw new Error('a group has no messages: pass --tokenizer <name or path> to write its decoded tokens instead');
  }
  if (group.messages.length !== group.scores.length) {
    throw new Error(`a group has ${group.messages.length} message lists for ${group.scores.length} scores`);
  }
  return { kind: 'messages', messages: group.messages, tools: group.tools && group.tools.length > 0 ? group.tools : null };
}

const offered = (view: GroupView & { kind: 'messages' }): OfferedTools => (view.tools ? { tools: view.tools } : {});

/** Highest score first; equal scores keep the group's order (a stable sort, as Python's). */
const byScore = (scores: readonly number[], descending: boolean): Scored[] =>
  scores.map((score, index) => ({ index, score })).sort((a, b) => (descending ? b.score - a.score : a.score - b.score));

/**
 * Atropos's SFT selection: the group's sequences from the highest score down, without those scoring 0 or less
 * (unless allowed), without those within `minimumScoreDiff` of the group's lowest score (when it is above 0), at most
 * `topN` of them.
 */
export function sftRecords(scores: readonly number[], view: GroupView, options: ScoreFilter & { topN: number }): SftRecord[] {
  const lowest = scores.length > 0 ? Math.min(...scores) : 0;
  return byScore(scores, true)
    .filter((s) => options.allowNegativeScores || s.score > 0)
    .filter((s) => options.minimumScoreDiff <= 0 || s.score - lowest > options.minimumScoreDiff)
    .slice(0, Math.max(0, options.topN))
    .map(({ index, score }) =>
      view.kind === 'text'
        ? { prefix: view.prefix, completion: view.completions[index]!, score }
        : { messages: view.messages[index]!, score, ...offered(view) },
    );
}

/**
 * Atropos's DPO pairing. Candidates for chosen are the sequences from the highest score down (those scoring 0 or
 * less left out unless allowed); candidates for rejected are the `nPairs` lowest-scoring sequences. Each of the first
 * `nPairs` chosen candidates is paired with a rejected one picked at random among those scoring more than
 * `minimumScoreDiff` below it, which is then used up; a chosen candidate with none is skipped.
 */
export function dpoPairs(
  scores: readonly number[],
  view: GroupView,
  options: ScoreFilter & { nPairs: number },
  random: () => number,
): DpoRecord[] {
  const n = Math.max(0, options.nPairs);
  const chosen = byScore(scores, true).filter((s) => options.allowNegativeScores || s.score > 0);
  const rejected = byScore(scores, false).slice(0, n);
  const pairs: DpoRecord[] = [];
  for (const pos of chosen.slice(0, n)) {
    const candidates = rejected.filter((neg) => neg.score < pos.score - options.minimumScoreDiff);
    if (candidates.length === 0) continue;
    const neg = candidates[Math.floor(random() * candidates.length)]!;
    rejected.splice(rejected.indexOf(neg), 1);
    pairs.push(
      view.kind === 'text'
        ? { prefix: view.prefix, pos: view.completions[pos.index]!, score: pos.score, neg: view.completions[neg.index]! }
        : { pos: view.messages[pos.index]!, score: pos.score, neg: view.messages[neg.index]!, ...offered(view) },
    );
  }
  return pairs;
}

/** A seeded generator of floats in [0, 1) (the SDK's `seededRandom`), so that `--seed` makes DPO's random pairing repeatable. */
export function seededRandom(seed: number): () => number {
  return sdkSeededRandom(seed).next;
}
