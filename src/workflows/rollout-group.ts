import { log, upsertSearchAttributes } from '@temporalio/workflow';
import type { EnvironmentActivities } from '../activities/environment.js';
import type { InferenceActivities } from '../activities/inference.js';
import type { TeacherActivities } from '../activities/teacher.js';
import type { TrajectoryActivities } from '../activities/trajectories.js';
import type { RolloutGroupInput, RolloutGroupResult, StoreRef } from '../schema/rollout.js';
import { stepActivities } from './activity-options.js';
import { MEAN_SCORE, STATUS } from './search-attributes.js';

/**
 * One item's group of rollouts: prepare → (generate ↔ step)* → parse → score → teacher? → assemble.
 * Every step is an activity with its own retry policy, so a failure is retried at that step alone, and a
 * crash resumes at the turn it was in.
 */
export async function rolloutGroup(input: RolloutGroupInput): Promise<RolloutGroupResult> {
  try {
    return await runGroup(input);
  } catch (error) {
    // The workflow fails with the cause; the status attribute says so too, so `ClothoStatus = "failed"` finds it.
    setStatus(input, 'failed', null);
    throw error;
  }
}

async function runGroup(input: RolloutGroupInput): Promise<RolloutGroupResult> {
  const { steps, taskQueues } = input;
  const env = (step: keyof typeof steps) => stepActivities<EnvironmentActivities>(steps[step], taskQueues.env);
  const { prepareGroup } = env('prepare');
  const { stepTurn } = env('step');
  const { parseGroup } = env('parse');
  const { scoreGroup } = env('score');
  const { generateTurn } = stepActivities<InferenceActivities>(steps.generate, taskQueues.llm);
  const { teacherLogprobs } = stepActivities<TeacherActivities>(steps.teacher, taskQueues.llm);
  const { assembleGroup } = stepActivities<TrajectoryActivities>(steps.assemble, taskQueues.env);

  const address = { runId: input.runId, environment: input.environment, itemIndex: input.itemIndex };
  const multiTurn = input.maxTurns > 1;
  let state: StoreRef = await prepareGroup({ ...address, groupSize: input.groupSize });
  let turn = 0;
  let tokens: number[] = [];
  for (; ; turn++) {
    const generated = await generateTurn({
      ...address,
      turn,
      state,
      sampling: input.sampling,
      maxTokenLength: input.maxTokenLength,
      multiTurn,
    });
    state = generated.state;
    tokens = generated.completionTokens;
    if (generated.active.length === 0 || turn + 1 >= input.maxTurns) break;
    const stepped = await stepTurn({ ...address, turn, state });
    state = stepped.state;
    if (stepped.active.length === 0) break;
  }
  const turns = turn + 1;

  const parsed = await parseGroup({ ...address, turn, state });
  const { scores } = await scoreGroup({ ...address, turn, state, parsed });
  const meanScore = scores.reduce((a, b) => a + b, 0) / scores.length;
  const base = { itemIndex: input.itemIndex, scores, meanScore, groupSize: input.groupSize, turns, policyVersion: input.policyVersion ?? null };
  const completionTokens = tokens.reduce((a, b) => a + b, 0);

  if (input.ensureScoresAreNotSame && scores.every((s) => s === scores[0])) {
    log.info('group dropped: all scores equal', { score: scores[0] });
    setStatus(input, 'dropped', meanScore);
    return { ...base, status: 'dropped', dropReason: 'scores_all_equal', tokens: completionTokens };
  }

  const teacher = input.teacherTopK === null ? null : await teacherLogprobs({ ...address, state, topK: input.teacherTopK });
  const assembled = await assembleGroup({
    ...address,
    state,
    scores,
    teacher,
    generationParams: { temperature: input.sampling.temperature, top_p: input.sampling.topP, max_tokens: input.maxTokenLength },
  });
  setStatus(input, 'scored', meanScore);
  return { ...base, status: 'scored', group: assembled.group, tokens: assembled.tokens, longestSequence: assembled.longestSequence };
}

function setStatus(input: RolloutGroupInput, status: string, meanScore: number | null): void {
  if (!input.searchAttributes) return;
  upsertSearchAttributes([{ key: STATUS, value: status }, ...(meanScore === null ? [] : [{ key: MEAN_SCORE, value: meanScore }])]);
}
