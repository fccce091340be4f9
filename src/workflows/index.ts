/**
 * Every workflow Clotho runs; the only `workflowsPath` of its workers.
 *
 * Replay rules (a worker killed at any moment is replaced by one that replays the history; if the code then
 * issues commands in another order the run is stuck with a nondeterminism error):
 * - Local activities only in straight-line code (rollout-group): never while another branch of the same
 *   workflow may issue a command. Their results arrive at another point on replay than when they first ran.
 *   `imports.test.ts` holds the list of workflows allowed to use them.
 * - Wait for pushes (signals, child results), never poll with timers: an idle workflow adds no history. The one
 *   exception is a source nothing can push from (`itemWait`: Atropos's `get_next_item` under serve), asked again on a
 *   backoff timer.
 * - A change of command order goes behind `patched(...)`, keeping the old path for runs started on it, for one
 *   minor release; the next raises REPLAY_BASELINE (src/version.ts) and deletes the branch (ARCHITECTURE.md).
 * - Replay recorded histories in the suite (test/replay), all recorded at the replay baseline or later.
 */
export { envRun } from './env-run.js';
export { rolloutGroup } from './rollout-group.js';
export { batcher } from './batcher.js';
export { evaluation } from './evaluation.js';
export { atroposEnvRun } from './atropos-env-run.js';
export { atroposRolloutGroup } from './atropos-rollout-group.js';
export { atroposEvaluation } from './atropos-evaluation.js';
export { verifiersEnvRun } from './verifiers-env-run.js';
export { verifiersRolloutGroup } from './verifiers-rollout-group.js';
