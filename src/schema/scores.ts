/** Rules on a group's scores shared by workflow and activity code: pure, with no imports, so the workflow sandbox may load them. */

/**
 * Whether a scored group is dropped unassembled: Atropos's `ensure_scores_are_not_same` is on and every score equals
 * the first (a group all right or all wrong teaches GRPO nothing). Decided here alone: the rollout-group workflow asks
 * it before it schedules the teacher and assemble steps, and the one-step finishGroup activity before it assembles.
 */
export function dropsForEqualScores(scores: readonly number[], ensureScoresAreNotSame: boolean): boolean {
  return ensureScoresAreNotSame && scores.every((s) => s === scores[0]);
}
