import { judgedPair, pairwiseRequests, parseBoxedChoice, preferenceOf, type JudgeRequest, type ScoreResult } from 'clotho';
import type { RlaifItem } from './data.js';

/** What `parse` keeps of a trajectory: its answer, and whether the token budget cut it off. */
export interface Response {
  text: string;
  truncated: boolean;
}

/** What the judge compares: each pair of the group's samples, or each sample against the item's reference answer. */
export type CompareMode = 'pairs' | 'reference';

/** The settings of the judging. */
export interface JudgingConfig {
  compare: CompareMode;
  criteria: string;
  judge_votes: number;
  judge_max_tokens: number;
  judge_temperature: number;
}

/** A sample cut off by the token budget scores this, below any judged sample; it is not shown to the judge. */
export const TRUNCATED_SCORE = -1;

/** One comparison: two samples (`first` < `second`), or a sample and the reference. Its id names its two requests. */
export interface Comparison {
  id: string;
  first: number;
  second: number | 'reference';
}

const REFERENCE = 'reference';

/**
 * The comparisons of a group. `pairs`: every pair of samples that finished; a sample with no other to be compared
 * with (a one-sample group in evaluation, or the rest cut off) is compared against the reference when there is one.
 * `reference`: each finished sample against the reference.
 */
export function comparisons(finished: boolean[], hasReference: boolean, compare: CompareMode): Comparison[] {
  const live = finished.flatMap((done, i) => (done ? [i] : []));
  const againstReference = (i: number): Comparison[] => (hasReference ? [{ id: `${i}-${REFERENCE}`, first: i, second: REFERENCE }] : []);
  if (compare === 'reference' || live.length === 1) return live.flatMap(againstReference);
  return live.flatMap((i, k) => live.slice(k + 1).map((j) => ({ id: `${i}-${j}`, first: i, second: j })));
}

/** The judge's questions about a group: each comparison, forward and reversed, `judge_votes` verdicts each. */
export function judgeRequests(item: RlaifItem, responses: Response[], config: JudgingConfig): JudgeRequest[] {
  const textOf = (side: number | 'reference') => (side === REFERENCE ? item.reference! : responses[side]!.text);
  return comparisons(
    responses.map((r) => !r.truncated),
    item.reference !== null,
    config.compare,
  ).flatMap((c) =>
    pairwiseRequests({
      id: c.id,
      conversation: item.prompt,
      first: textOf(c.first),
      second: textOf(c.second),
      criteria: config.criteria,
      votes: config.judge_votes,
      maxTokens: config.judge_max_tokens,
      temperature: config.judge_temperature,
    }),
  );
}

interface Involvement {
  id: string;
  side: 'first' | 'second';
  reference: boolean;
}

/** The comparisons a sample took part in, read back from the ids of the group's judgements. */
function comparisonsOf(sample: number, judgements: Record<string, string[]>): Involvement[] {
  const ids = new Set(Object.keys(judgements).map((key) => key.replace(/\/(forward|reversed)$/, '')));
  return [...ids].flatMap((id): Involvement[] => {
    const [first, second] = id.split('-');
    if (first === String(sample)) return [{ id, side: 'first', reference: second === REFERENCE }];
    if (second === String(sample)) return [{ id, side: 'second', reference: false }];
    return [];
  });
}

/**
 * A sample's score: its mean preference over the comparisons it took part in, minus one half (in [−0.5, 0.5]; for a
 * pair of samples exactly Atropos's centred RLAIF score); 0 when it was compared with nothing; −1 when it was cut
 * off. Metrics: the group's judge votes and unreadable votes (the same on every sample, so their group mean is the
 * group's count), whether the sample was cut off, and its preference against the reference when it met it.
 */
export function scoreSample(sample: number, response: Response, judgements: Record<string, string[]>, compare: CompareMode): ScoreResult {
  const answers = Object.values(judgements).flat();
  const metrics: Record<string, number> = {
    votes: answers.length,
    unparsed_votes: answers.filter((a) => parseBoxedChoice(a) === null).length,
    truncated: response.truncated ? 1 : 0,
  };
  if (response.truncated) return { score: TRUNCATED_SCORE, metrics: compare === 'reference' ? { ...metrics, win_rate: 0 } : metrics };
  const preferences = comparisonsOf(sample, judgements).map((c) => ({
    ...c,
    preference: preferenceOf(judgedPair(judgements, c.id)!, c.side),
  }));
  const versusReference = preferences.find((p) => p.reference);
  if (versusReference) metrics.win_rate = versusReference.preference;
  if (preferences.length === 0) return { score: 0, metrics };
  return { score: preferences.reduce((sum, p) => sum + p.preference, 0) / preferences.length - 0.5, metrics };
}
