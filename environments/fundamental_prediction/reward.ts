/**
 * The reward of Atropos's `fundamental_prediction_environment.py` (`score` and `_calculate_magnitude_score`), as pure
 * functions: direction right → 1 plus a bonus for the magnitude; length penalty; then ±1.
 */
import { pythonFloat, type Prediction } from './answer.js';

/** Bonus for a magnitude off by at most `within` percentage points; beyond the last step, 0. */
export const MAGNITUDE_STEPS: readonly { within: number; bonus: number }[] = [
  { within: 0, bonus: 1.0 },
  { within: 1, bonus: 0.9 },
  { within: 5, bonus: 0.7 },
  { within: 10, bonus: 0.5 },
  { within: 20, bonus: 0.3 },
];

/**
 * How close the predicted percentage is to the data set's: 1.0 exact, 0.9 within 1 point, 0.7 within 5, 0.5 within
 * 10, 0.3 within 20, else 0. Both are read as Python's `float()` would; one that does not read gives 0 (and so does
 * NaN, whose distance compares false with every step).
 */
export function magnitudeScore(predicted: string | number, expected: string | number): number {
  const p = pythonFloat(predicted);
  const e = pythonFloat(expected);
  if (p === null || e === null) return 0;
  const diff = Math.abs(p - e);
  return MAGNITUDE_STEPS.find((step) => diff <= step.within)?.bonus ?? 0;
}

/** The graded score before the length penalty: 0 unparsed or wrong direction; 1 + magnitude bonus when right. */
export function predictionScore(prediction: Prediction | null, answer: string, magnitude: string | number): number {
  if (prediction === null || prediction.direction !== answer) return 0;
  return 1 + magnitudeScore(prediction.magnitude, magnitude);
}

/** Penalty for a response longer than 95% of `maxTokenLength`: minus half its length as a fraction of the budget. */
export function lengthPenalised(score: number, responseTokens: number, maxTokenLength: number): number {
  return responseTokens > maxTokenLength * 0.95 ? score - 0.5 * (responseTokens / maxTokenLength) : score;
}

/** Atropos's binary reward: +1 for any positive score, otherwise −1. */
export function binarise(score: number): number {
  return score > 0 ? 1 : -1;
}
