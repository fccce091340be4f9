/** What the rollout-group workflow and its turn activities agree on: pure, with no imports, so the workflow sandbox may load it. */

/**
 * How long one `takeTurns` activity keeps taking an episode's turns: another while less than this has passed since it
 * started. A workflow activation costs the SDK a few ms of CPU whatever it does (issue 25), as much as a fast turn
 * itself, so fast turns share one; a turn that takes longer is an activity of its own.
 */
export const TURNS_WINDOW_MS = 1000;
