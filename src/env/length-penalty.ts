/**
 * Atropos's length penalties: when every answer of a group is right, the scores no longer say which to prefer, so
 * they are rescored by length and shorter right answers win. For an environment's `rescoreGroup` hook.
 */

/**
 * `threshold`: Atropos's gsm8k_server rule (and its tool-calling, reasoning-gym and community environments'): a
 * trajectory up to `thresholdRatio × maxTokenLength` tokens keeps 1; above it the score falls linearly to 0 at
 * `maxTokenLength`.
 *
 * `relative`: Atropos's math_server rule: scores spread from 1 (the group's shortest) to −1 (its longest) along
 * `cos(π · (length − shortest) / (longest − shortest))`; a group whose lengths differ by at most a tenth of the
 * shortest is left as it is (too alike to rank).
 */
export type LengthPenaltyRule = 'threshold' | 'relative';

/** How {@link lengthPenalty} discounts long completions. */
export interface LengthPenaltyOptions {
  rule: LengthPenaltyRule;
  /** The token budget the `threshold` rule measures against (the environment's `max_token_length`). */
  maxTokenLength: number;
  /** Share of `maxTokenLength` that is free of penalty under the `threshold` rule. @default 0.5 */
  thresholdRatio?: number;
}

/**
 * The group's scores after the length penalty: unchanged unless every score is 1 (every answer right).
 * @param lengths each trajectory's length in tokens, in the order of `scores`
 */
export function lengthPenalty(scores: readonly number[], lengths: readonly number[], options: LengthPenaltyOptions): number[] {
  if (lengths.length !== scores.length) throw new RangeError(`${scores.length} scores but ${lengths.length} lengths`);
  if (scores.length === 0 || !scores.every((s) => s === 1)) return [...scores];
  return options.rule === 'threshold'
    ? byThreshold(lengths, options.maxTokenLength, options.thresholdRatio ?? 0.5)
    : byRank(scores, lengths);
}

function byThreshold(lengths: readonly number[], max: number, ratio: number): number[] {
  const threshold = max * ratio;
  return lengths.map((length) => (length <= threshold ? 1 : 1 - Math.min((length - threshold) / (max - threshold), 1)));
}

function byRank(scores: readonly number[], lengths: readonly number[]): number[] {
  const shortest = Math.min(...lengths);
  const spread = Math.max(...lengths) - shortest;
  // Atropos drops such a group; here its equal scores let `ensure_scores_are_not_same` drop it, and say so.
  if (spread <= 0.1 * shortest) return [...scores];
  return lengths.map((length) => Math.cos(((length - shortest) / spread) * Math.PI));
}
