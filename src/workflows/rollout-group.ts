import { CancellationScope, log, proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { EnvironmentActivities } from '../activities/environment.js';
import type { GenerateTurnResult, InferenceActivities } from '../activities/inference.js';
import type { JudgeActivities } from '../activities/judge.js';
import type { TeacherActivities } from '../activities/teacher.js';
import type { ToolCallActivities } from '../activities/tool-calls.js';
import type { TrajectoryActivities } from '../activities/trajectories.js';
import type { RolloutGroupInput, RolloutGroupResult, StoreRef } from '../schema/rollout.js';
import { activityOptions, stepActivities } from './activity-options.js';
import { MEAN_SCORE, STATUS, TOOL_CALLS, TURNS } from './search-attributes.js';

/**
 * One item's group of rollouts: prepare → setup? → (generate → tool calls → step)* → parse → score → teardown? →
 * teacher? → assemble. Every step is an activity with its own retry policy, so a failure is retried at that step
 * alone, and a crash resumes at the turn (and the tool call) it was in.
 */
export async function rolloutGroup(input: RolloutGroupInput): Promise<RolloutGroupResult> {
  const hooks = input.hooks ?? { setup: false, teardown: false };
  const { setupGroup } = stepActivities<EnvironmentActivities>(input.steps.setup ?? input.steps.step, input.taskQueues.env);
  const { teardownGroup } = stepActivities<EnvironmentActivities>(input.steps.teardown ?? input.steps.step, input.taskQueues.env);
  const hookInput = { runId: input.runId, environment: input.environment, itemIndex: input.itemIndex, groupSize: input.groupSize };
  let tornDown = !hooks.teardown;
  const teardown = async () => {
    if (tornDown) return;
    tornDown = true;
    await teardownGroup(hookInput);
  };
  try {
    if (hooks.setup) await setupGroup(hookInput);
    return await runGroup(input, teardown);
  } catch (error) {
    // The workflow fails with the cause; the status attribute says so too, so `ClothoStatus = "failed"` finds it.
    setAttributes(input, { status: 'failed' });
    // Resources of a failed or cancelled group are still released.
    await CancellationScope.nonCancellable(teardown);
    throw error;
  }
}

async function runGroup(input: RolloutGroupInput, teardown: () => Promise<void>): Promise<RolloutGroupResult> {
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
  let toolCalls = 0;
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
    toolCalls += await callTools(input, turn, state, generated.toolCalls ?? []);
    const stepped = await stepTurn({ ...address, turn, state });
    state = stepped.state;
    if (stepped.active.length === 0) break;
  }
  const turns = turn + 1;

  const parsed = await parseGroup({ ...address, turn, state });
  const judgements = input.judged ? await judgeGroup(input, state, parsed) : null;
  const { scores, advantages, metrics } = await scoreGroup({ ...address, turn, state, parsed, ...(judgements ? { judgements } : {}) });
  await teardown();
  const meanScore = scores.reduce((a, b) => a + b, 0) / scores.length;
  const base = { itemIndex: input.itemIndex, scores, meanScore, groupSize: input.groupSize, turns, policyVersion: input.policyVersion ?? null, ...(toolCalls > 0 ? { toolCalls } : {}), ...(Object.keys(metrics).length > 0 ? { metrics } : {}) };
  const completionTokens = tokens.reduce((a, b) => a + b, 0);

  if (input.ensureScoresAreNotSame && scores.every((s) => s === scores[0])) {
    log.info('group dropped: all scores equal', { score: scores[0] });
    setAttributes(input, { status: 'dropped', meanScore, turns, toolCalls });
    return { ...base, status: 'dropped', dropReason: 'scores_all_equal', tokens: completionTokens };
  }

  const teacher = input.teacherTopK === null ? null : await teacherLogprobs({ ...address, state, topK: input.teacherTopK });
  const assembled = await assembleGroup({
    ...address,
    state,
    scores,
    teacher,
    ...(advantages ? { advantages } : {}),
    generationParams: { temperature: input.sampling.temperature, top_p: input.sampling.topP, max_tokens: input.maxTokenLength },
  });
  setAttributes(input, { status: 'scored', meanScore, turns, toolCalls });
  return { ...base, status: 'scored', group: assembled.group, tokens: assembled.tokens, longestSequence: assembled.longestSequence };
}

/** Asks the judge model the environment's questions about the group, in an activity of its own on the LLM queue. */
function judgeGroup(input: RolloutGroupInput, state: StoreRef, parsed: StoreRef): Promise<StoreRef> {
  const { judgeGroup: ask } = stepActivities<JudgeActivities>(input.steps.judge ?? input.steps.generate, input.taskQueues.llm);
  return ask({ runId: input.runId, environment: input.environment, itemIndex: input.itemIndex, state, parsed });
}

/**
 * Runs the turn's tool calls, each its own activity named in the UI by the tool and its arguments: samples side by
 * side, one sample's calls in order (a call may depend on the state the one before left).
 */
async function callTools(
  input: RolloutGroupInput,
  turn: number,
  state: StoreRef,
  calls: NonNullable<GenerateTurnResult['toolCalls']>,
): Promise<number> {
  const options = activityOptions(input.steps.tool ?? input.steps.step, input.taskQueues.env);
  const address = { runId: input.runId, environment: input.environment, itemIndex: input.itemIndex, turn, state };
  await Promise.all(
    calls.map(async ({ sample, calls: ofSample }) => {
      for (const [call, { name, arguments: args }] of ofSample.entries()) {
        const { callTool } = proxyActivities<ToolCallActivities>({ ...options, summary: `sample ${sample}: ${name}(${args})` });
        await callTool({ ...address, sample, call, name, arguments: args });
      }
    }),
  );
  return calls.reduce((n, c) => n + c.calls.length, 0);
}

function setAttributes(
  input: RolloutGroupInput,
  { status, meanScore, turns, toolCalls }: { status: string; meanScore?: number; turns?: number; toolCalls?: number },
): void {
  if (!input.searchAttributes) return;
  upsertSearchAttributes([
    { key: STATUS, value: status },
    ...(meanScore === undefined ? [] : [{ key: MEAN_SCORE, value: meanScore }]),
    ...(turns === undefined ? [] : [{ key: TURNS, value: turns }]),
    ...(toolCalls === undefined ? [] : [{ key: TOOL_CALLS, value: toolCalls }]),
  ]);
}
