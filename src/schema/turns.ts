/** What the rollout-group workflow and its turn activities agree on: pure, with no imports, so the workflow sandbox may load it. */

/**
 * How long one `takeTurns` activity keeps taking an episode's turns: another while less than this has passed since it
 * started. A workflow activation costs the SDK a few ms of CPU whatever it does (issue 25), as much as a fast turn
 * itself, so fast turns share one; a turn that takes longer is an activity of its own. Below the 4 s at which the SDK
 * completes a workflow task held by local activities (80 % of WORKFLOW_TASK_TIMEOUT_MS), so each such completion
 * records at least one activity's turns in the history. 3 s against 1 s: 20–30 % less CPU per turn, workers and
 * server together (`npm run bench:tool-use`; 8 s saved little more).
 */
export const TURNS_WINDOW_MS = 3000;
