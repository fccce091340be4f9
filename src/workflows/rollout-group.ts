import { CancellationScope, log, upsertSearchAttributes } from '@temporalio/workflow';
import type { EnvironmentActivities, FinishGroupResult } from '../activities/environment.js';
import type { GenerateTurnResult, InferenceActivities } from '../activities/inference.js';
import type { HarnessActivities } from '../activities/harness.js';
import type { JudgeActivities } from '../activities/judge.js';
import type { TeacherActivities } from '../activities/teacher.js';
import type { ToolCallActivities } from '../activities/tool-calls.js';
import type { TakeTurnsInput, TakeTurnsResult, TurnActivities } from '../activities/turn.js';
import type { AssembleResult, TrajectoryActivities } from '../activities/trajectories.js';
import type { RolloutGroupInput, RolloutGroupResult, StoreRef } from '../schema/rollout.js';
import { TURNS_WINDOW_MS } from '../schema/turns.js';
import { dropsForEqualScores } from '../schema/scores.js';
import { cut } from '../schema/text.js';
import { stepActivities } from './activity-options.js';
import { MEAN_SCORE, STATUS, TOOL_CALLS, TURNS } from './search-attributes.js';

/**
 * One item's group of rollouts: prepare → setup? → (generate → tool calls → step)* → parse → score → teardown? →
 * teacher? → assemble. Every step keeps what it did in the store (completions, each tool call's result, each turn's
 * state), so a retry, or a crash, resumes at the turn and the tool call it was in without asking the model or running
 * a tool again for what was recorded.
 *
 * By default (issue 25) every step is local and an episode's turns run in `takeTurns` local activities: each takes
 * turns while less than TURNS_WINDOW_MS (3 s) has passed since it started, the first prepares the group and the last
 * finishes it (parse, score and assemble) when no judge or teacher sits between. A workflow activation costs the SDK a
 * few ms of CPU whatever it does (its vm calls under a watchdog, a stack trace per promise), as much as a fast turn,
 * so fast turns share one. What a group costs Temporal (`npm run bench:orchestration` and `bench:tool-use` print it):
 * - a single-turn group is 7 history events and 2 server round trips of its own: WorkflowExecutionStarted (the input,
 *   durable before any work), one workflow task (scheduled, started, completed: a poll and a completion), the
 *   takeTurns marker (its result, so a replay never runs it again), UpsertWorkflowSearchAttributes (ClothoStatus,
 *   ClothoMeanScore, ClothoTurns, ClothoToolCalls, so that `ClothoStatus = "failed"` or `ClothoTurns > 20` finds
 *   groups; known only at the end) and WorkflowExecutionCompleted (the result the parent reads);
 * - an episode adds a marker per takeTurns, and the workflow task stays open across them: the SDK completes it and
 *   takes a new one each time 80 % of its timeout passes (three events and two round trips), so that a crash runs at
 *   most that much work again, which reads its turns back from the store.
 * Generation or tool calls on their task queues (`--steps.generate.local false`, `--steps.tool.local false`; groups of
 * runs started before takeTurns too, `oneActivityPerTurn` absent) run each step as its own activity: a single-turn
 * group is then 14 events and 6 round trips (generateTurn scheduled, started, completed and the workflow task it wakes;
 * prepareGroup's and finishGroup's markers), and a turn with one tool call 13 events and 8 round trips (generateTurn
 * and its workflow task, callTool and its workflow task, stepTurn's marker). Each such activity heartbeats, shows its
 * attempts as events in the UI, and a call on a dead worker is retried after its heartbeat timeout. With generation
 * local and tools on the queue, a turn is generateTurn's marker and callTool's six events; with both local but no
 * takeTurns, three markers (generateTurn, callTurnTools, stepTurn).
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
  const { parseGroup } = env('parse');
  const { scoreGroup } = env('score');
  const { teacherLogprobs } = stepActivities<TeacherActivities>(steps.teacher, taskQueues.llm);
  const { assembleGroup } = stepActivities<TrajectoryActivities>(steps.assemble, taskQueues.env);

  const address = { runId: input.runId, environment: input.environment, itemIndex: input.itemIndex };
  // With no judge or teacher between them, parse, score and assemble are one local activity, under score's retry
  // policy and timeout.
  const local = steps.parse.local && steps.score.local && steps.assemble.local;
  const finishesLocally = local && !input.judged && input.teacherTopK === null;
  const generationParams = { temperature: input.sampling.temperature, top_p: input.sampling.topP, max_tokens: input.maxTokenLength };
  const episode = input.harness
    ? await runHarnesses(input)
    : turnsInOneActivity(input)
      ? await runTurns(input, finishesLocally ? { ensureScoresAreNotSame: input.ensureScoresAreNotSame, generationParams } : undefined)
      : await stepTurns(input, await prepareGroup({ ...address, groupSize: input.groupSize }));
  const { state, turn, tokens, toolCalls, weightsVersion } = episode;
  const turns = turn + 1;
  const ended = { turns, toolCalls, completionTokens: tokens.reduce((a, b) => a + b, 0), weightsVersion };
  if (episode.finished) {
    await teardown();
    const { scores, metrics, assembled } = episode.finished;
    return outcome(input, ended, scores, metrics, assembled);
  }
  if (finishesLocally) {
    const { finishGroup } = env('score');
    const { scores, metrics, assembled } = await finishGroup({
      ...address,
      turn,
      state,
      ensureScoresAreNotSame: input.ensureScoresAreNotSame,
      generationParams,
    });
    await teardown();
    return outcome(input, ended, scores, metrics, assembled);
  }

  const parsed = await parseGroup({ ...address, turn, state });
  const judgements = input.judged ? await judgeGroup(input, state, parsed) : null;
  const { scores, advantages, metrics } = await scoreGroup({ ...address, turn, state, parsed, ...(judgements ? { judgements } : {}) });
  await teardown();
  if (dropsForEqualScores(scores, input.ensureScoresAreNotSame)) return outcome(input, ended, scores, metrics, null);
  const teacher = input.teacherTopK === null ? null : await teacherLogprobs({ ...address, state, topK: input.teacherTopK });
  const assembled = await assembleGroup({ ...address, state, scores, teacher, ...(advantages ? { advantages } : {}), generationParams });
  return outcome(input, ended, scores, metrics, assembled);
}

/** Where an episode is after its last turn: its state, that turn, each trajectory's completion tokens, calls made. */
interface Episode {
  state: StoreRef;
  turn: number;
  tokens: number[];
  toolCalls: number;
  /** The finished group, when the last turn's activity finished it. */
  finished?: FinishGroupResult;
  /** The oldest weights version that generated any of its turns, as the last generating activity reported it. */
  weightsVersion?: number | undefined;
}

/**
 * Whether an episode's turns run as `takeTurns` local activities: in groups of runs that ask for it
 * (`oneActivityPerTurn`, set by every run started since; groups of older runs replay as they ran), when generation,
 * tools and step all run local, as they do by default.
 */
function turnsInOneActivity({ oneActivityPerTurn, steps }: RolloutGroupInput): boolean {
  return oneActivityPerTurn === true && steps.prepare.local && steps.generate.local && steps.step.local && (steps.tool?.local ?? false);
}

/**
 * The turns of an episode as `takeTurns` local activities, each a turn or, while turns are fast, the turns of about
 * 3 s (`TURNS_WINDOW_MS`): the first prepares the group, and the last finishes it when `finish` is given. A marker
 * and a workflow activation per activity; the workflow task stays open across them (the SDK completes it and takes a
 * new one each time 80 % of its timeout passes).
 */
async function runTurns(input: RolloutGroupInput, finish: TakeTurnsInput['finish']): Promise<Episode> {
  const { generate, tool, step } = input.steps;
  // An activity takes turns for up to TURNS_WINDOW_MS, then one more: its timeout covers that and a turn's generation, a
  // tool call and step.
  const turnMs = generate.startToCloseTimeoutMs + (tool?.startToCloseTimeoutMs ?? 0) + step.startToCloseTimeoutMs;
  const turnsStep = { ...generate, startToCloseTimeoutMs: TURNS_WINDOW_MS + turnMs };
  let state: StoreRef | null = null;
  let toolCalls = 0;
  for (let turn = 0; ;) {
    const { takeTurns } = stepActivities<TurnActivities>(turnsStep, input.taskQueues.llm, `turn ${turn}`);
    const taken: TakeTurnsResult = await takeTurns({
      runId: input.runId,
      environment: input.environment,
      itemIndex: input.itemIndex,
      turn,
      state,
      groupSize: input.groupSize,
      sampling: input.sampling,
      maxTokenLength: input.maxTokenLength,
      maxTurns: input.maxTurns,
      ...(finish ? { finish } : {}),
    });
    state = taken.state;
    toolCalls += taken.calls.length;
    turn += taken.turns;
    if (!taken.next) {
      const last = { state, turn: turn - 1, tokens: taken.completionTokens, toolCalls, weightsVersion: taken.weightsVersion };
      return taken.finished ? { ...last, finished: taken.finished } : last;
    }
  }
}

/**
 * A harness group's rollouts (issue 27): one `runHarness` activity per sample on the env queue, side by side, each an
 * agent program's whole episode, heartbeating its calls (a rollout on a dead worker is retried after its heartbeat
 * timeout and replays the calls it recorded); then `gatherHarness`, local, makes the group's state of their records.
 * Three events per rollout (scheduled, started, completed), three per workflow task their ends wake, and a marker.
 */
async function runHarnesses(input: RolloutGroupInput): Promise<Episode> {
  const address = { runId: input.runId, environment: input.environment, itemIndex: input.itemIndex };
  const rollouts = Array.from({ length: input.groupSize }, (_, sample) => {
    const { runHarness } = stepActivities<HarnessActivities>(input.steps.harness, input.taskQueues.env, `sample ${sample}`);
    return runHarness({ ...address, sample, sampling: input.sampling, maxTurns: input.maxTurns, maxTokenLength: input.maxTokenLength });
  });
  await Promise.all(rollouts);
  const { gatherHarness } = stepActivities<HarnessActivities>(input.steps.assemble, input.taskQueues.env);
  const gathered = await gatherHarness({ ...address, groupSize: input.groupSize });
  return {
    state: gathered.state,
    turn: Math.max(0, gathered.turns - 1),
    tokens: gathered.completionTokens,
    toolCalls: 0,
    weightsVersion: gathered.weightsVersion,
  };
}

/** The turns of an episode as one activity per step: generate, the tool calls (`callTools`), step. */
async function stepTurns(input: RolloutGroupInput, prepared: StoreRef): Promise<Episode> {
  const { steps, taskQueues } = input;
  const address = { runId: input.runId, environment: input.environment, itemIndex: input.itemIndex };
  const { stepTurn } = stepActivities<EnvironmentActivities>(steps.step, taskQueues.env);
  const { generateTurn } = stepActivities<InferenceActivities>(steps.generate, taskQueues.llm);
  const multiTurn = input.maxTurns > 1;
  let state = prepared;
  let tokens: number[] = [];
  let toolCalls = 0;
  let weightsVersion: number | undefined;
  for (let turn = 0; ; turn++) {
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
    weightsVersion = generated.weightsVersion;
    if (generated.active.length === 0 || turn + 1 >= input.maxTurns) return { state, turn, tokens, toolCalls, weightsVersion };
    toolCalls += await callTools(input, turn, state, generated.toolCalls ?? []);
    const stepped = await stepTurn({ ...address, turn, state });
    state = stepped.state;
    if (stepped.active.length === 0) return { state, turn, tokens, toolCalls, weightsVersion };
  }
}

/**
 * The group's result and its search attributes: scored with its assembled group, or dropped (null) for equal scores.
 * Its policy version is the oldest weights version that generated any of its tokens when the server reports them
 * (`clotho inference`: read from the activities' results, so a replay sees the same), else the input's.
 */
function outcome(
  input: RolloutGroupInput,
  {
    turns,
    toolCalls,
    completionTokens,
    weightsVersion,
  }: { turns: number; toolCalls: number; completionTokens: number; weightsVersion: number | undefined },
  scores: number[],
  metrics: Record<string, number>,
  assembled: AssembleResult | null,
): RolloutGroupResult {
  const meanScore = scores.reduce((a, b) => a + b, 0) / scores.length;
  const base = {
    itemIndex: input.itemIndex,
    scores,
    meanScore,
    groupSize: input.groupSize,
    turns,
    policyVersion: weightsVersion ?? input.policyVersion ?? null,
    ...(toolCalls > 0 ? { toolCalls } : {}),
    ...(Object.keys(metrics).length > 0 ? { metrics } : {}),
  };
  if (!assembled) {
    log.info('group dropped: all scores equal', { score: scores[0] });
    setAttributes(input, { status: 'dropped', meanScore, turns, toolCalls });
    return { ...base, status: 'dropped', dropReason: 'scores_all_equal', tokens: completionTokens };
  }
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
 * side, one sample's calls in order (a call may depend on the state the one before left). With the tool step local,
 * the turn's calls are one local activity that runs them the same way: local activities only in straight-line code
 * (DESIGN), and an episode with local generation and tools then runs its turns in long workflow tasks with no task
 * queue round trip at all (issue 12).
 */
async function callTools(
  input: RolloutGroupInput,
  turn: number,
  state: StoreRef,
  calls: NonNullable<GenerateTurnResult['toolCalls']>,
): Promise<number> {
  // Inputs from before the tool step had one ran tools as activities under the step's policy, never local.
  const step = input.steps.tool ?? { ...input.steps.step, local: false };
  const address = { runId: input.runId, environment: input.environment, itemIndex: input.itemIndex, turn, state };
  const named = calls.flatMap(({ sample, calls: ofSample }) => ofSample.map((call) => callSummary(sample, call)));
  if (step.local) {
    if (named.length === 0) return 0;
    // The step's timeout is per call; a sample's calls run one after another inside this one activity.
    const inOrder = Math.max(...calls.map(({ calls: ofSample }) => ofSample.length));
    const turnStep = { ...step, startToCloseTimeoutMs: step.startToCloseTimeoutMs * inOrder };
    const { callTurnTools } = stepActivities<ToolCallActivities>(turnStep, input.taskQueues.env, cut(named.join('; '), SUMMARY_CHARS));
    await callTurnTools({ ...address, calls });
    return named.length;
  }
  await Promise.all(
    calls.map(async ({ sample, calls: ofSample }) => {
      for (const [call, { name, arguments: args }] of ofSample.entries()) {
        const { callTool } = stepActivities<ToolCallActivities>(step, input.taskQueues.env, callSummary(sample, { name, arguments: args }));
        await callTool({ ...address, sample, call, name, arguments: args });
      }
    }),
  );
  return named.length;
}

/** How the UI names a call: `sample 0: add({"x":2})`. */
const callSummary = (sample: number, { name, arguments: args }: { name: string; arguments: string }) =>
  `sample ${sample}: ${name}(${args})`;

/** Local activity summaries name a turn's calls up to this many characters. */
const SUMMARY_CHARS = 400;

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
