import { upsertSearchAttributes } from '@temporalio/workflow';
import type { VerifiersGatherActivities } from '../activities/verifiers.js';
import type { VerifiersActivities, VerifiersGroupInput, VerifiersGroupResult } from '../schema/verifiers.js';
import { stepActivities } from './activity-options.js';
import { MEAN_SCORE, STATUS, TURNS } from './search-attributes.js';

/**
 * One task's group of a verifiers environment: `groupSize` `verifiersEpisode` activities side by side on the Python
 * worker's queue, each one whole episode run by verifiers (its runtime, harness, tools and scoring) with every model
 * call through Clotho's session, heartbeating its calls (an episode on a dead worker runs again after its heartbeat
 * timeout, its recorded calls answered from the store); then `gatherVerifiers`, local, makes the Atropos group of
 * their records: one sequence per trainable trace, its reward the score. An episode declined by verifiers' own
 * verdict (`outcome.py`) drops the group with its reason; one that keeps raising fails the group with its Python
 * traceback once the step's retries run out, never scored. Events: started, one workflow task, three per episode,
 * three per workflow task their ends wake, the gather marker, the search attributes, completed.
 */
export async function verifiersRolloutGroup(input: VerifiersGroupInput): Promise<VerifiersGroupResult> {
  const { itemIndex, task, taskQueues, steps } = input;
  const base = { itemIndex, scores: [], metrics: {}, size: 0, policyVersion: input.policyVersion };
  let episodes;
  try {
    episodes = await Promise.all(
      Array.from({ length: input.groupSize }, (_, sample) => {
        const { verifiersEpisode } = stepActivities<VerifiersActivities>(steps.episode, taskQueues.verifiers, `sample ${sample}`);
        return verifiersEpisode({ itemIndex, sample, task });
      }),
    );
  } catch (error) {
    setStatus(input, 'failed');
    throw error;
  }
  const declined = episodes.find((episode) => episode.status === 'declined');
  if (declined) {
    setStatus(input, 'dropped');
    return { ...base, status: 'declined', reason: `verifiers:${declined.reason ?? 'declined'}` };
  }
  const { gatherVerifiers } = stepActivities<VerifiersGatherActivities>(steps.gather, taskQueues.workflows);
  const gathered = await gatherVerifiers({
    runId: input.runId,
    environment: input.environment,
    itemIndex,
    groupSize: input.groupSize,
    generationParams: input.generationParams,
  });
  if (!gathered.group) {
    // No trainable trace asked the model anything: nothing to train on.
    setStatus(input, 'dropped');
    return { ...base, status: 'declined', reason: 'verifiers:no_model_calls', metrics: gathered.metrics };
  }
  const meanScore = gathered.scores.reduce((a, b) => a + b, 0) / Math.max(gathered.scores.length, 1);
  setStatus(input, 'scored', meanScore, gathered.turns);
  return {
    ...base,
    status: 'scored',
    group: gathered.group,
    scores: gathered.scores,
    metrics: gathered.metrics,
    size: gathered.scores.length,
    longestSequence: gathered.longestSequence,
    // The oldest weights that generated any of its calls, when the server says (`clotho inference`).
    policyVersion: gathered.weightsVersion ?? input.policyVersion,
  };
}

function setStatus(input: VerifiersGroupInput, status: string, meanScore?: number, turns?: number): void {
  if (!input.searchAttributes) return;
  upsertSearchAttributes([
    { key: STATUS, value: status },
    ...(meanScore === undefined ? [] : [{ key: MEAN_SCORE, value: meanScore }]),
    ...(turns === undefined ? [] : [{ key: TURNS, value: turns }]),
  ]);
}
