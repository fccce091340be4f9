import { ApplicationFailure } from '@temporalio/common';
import { toScoreResult } from '../env/rewards.js';
import { withThinkingPrompt } from '../env/thinking.js';
import { isTool, toOpenAITool } from '../env/tools.js';
import { parseToolCalls } from '../inference/tool-calls.js';
import type { StoreRef } from '../schema/rollout.js';
import { dropsForEqualScores } from '../schema/scores.js';
import {
  groupResource,
  heartbeating,
  itemOf,
  judgeOrMissing,
  liveJudge,
  liveness,
  setupKey,
  type EnvironmentActivityDeps,
} from './environment-context.js';
import {
  cloneGroupState,
  groupKey,
  lastAssistant,
  lastAssistantIndex,
  lastAssistantText,
  loadGroupState,
  saveGroupBase,
  saveGroupDelta,
  type GroupAddress,
  type GroupState,
  type Trajectory,
} from './group-state.js';
import { readToolRecord, toolCallsOf, type ToolRecord } from './tool-calls.js';
import { assembleScoredGroup, type AssembleResult } from './trajectories.js';
import type { HarnessOutcome } from '../env/harness.js';
import type { LoadedEnvironment } from '../env/loaded.js';

export type { EnvironmentActivityDeps } from './environment-context.js';

export interface PrepareGroupInput extends GroupAddress {
  groupSize: number;
}

export interface TurnInput extends GroupAddress {
  turn: number;
  state: StoreRef;
}

export interface StepTurnResult {
  state: StoreRef;
  /** Sample indices still taking turns. */
  active: number[];
}

export interface ScoreGroupResult {
  scores: number[];
  /** Each metric averaged over the group. */
  metrics: Record<string, number>;
  /** Per-turn advantages (`[sample][turn]`) when the environment computes them. */
  advantages?: StoreRef;
}

export interface GroupHookInput extends GroupAddress {
  groupSize: number;
}

export interface FinishGroupInput extends TurnInput {
  /** Atropos's `ensure_scores_are_not_same`: a group whose scores are all equal is not assembled. */
  ensureScoresAreNotSame: boolean;
  generationParams: Record<string, unknown>;
}

/** The group's scores, and the assembled group unless it was dropped for equal scores. */
export interface FinishGroupResult {
  scores: number[];
  metrics: Record<string, number>;
  assembled: AssembleResult | null;
}

/** Activities that run environment code (clotho-env queue): prompts, multi-turn steps, parsing, scoring. */
export function createEnvironmentActivities(deps: EnvironmentActivityDeps) {
  const { environments, store } = deps;
  const hookContext = (input: GroupHookInput) => {
    const { env, item } = itemOf(environments, input);
    const groupId = groupKey(input, 'group');
    return { env, context: { item, config: env.config, itemIndex: input.itemIndex, groupSize: input.groupSize, groupId, ...liveness() } };
  };
  /** What parse and score see of trajectory i besides the environment's own arguments. */
  const trajectoryContext = (address: GroupAddress, t: Trajectory, sample: number) => {
    const { env, item } = itemOf(environments, address);
    const { calls, malformed } = parseToolCalls(lastAssistant(t) ?? {});
    return {
      item,
      config: env.config,
      sample,
      toolCalls: calls,
      malformedToolCalls: malformed,
      messages: t.messages,
      finishReason: t.finishReason ?? 'stop',
      state: t.state ?? null,
      ...(env.definition.harness ? { harness: t.state as HarnessOutcome } : {}),
      ...liveness(),
    };
  };

  return {
    /** Builds the prompt of item i and the initial state of its group's trajectories ({@link preparedState}). */
    async prepareGroup(input: PrepareGroupInput): Promise<StoreRef> {
      return saveGroupBase(store, groupKey(input, 'turn-0', 'prompt'), await preparedState(deps, input));
    },

    /** Runs the environment's group setup (a sandbox, a game server) and keeps its result for steps, tools and scores. */
    async setupGroup(input: GroupHookInput): Promise<void> {
      const existing = await store.tryGet(setupKey(input));
      if (existing !== undefined) return;
      const { env, context } = hookContext(input);
      const value = (await heartbeating(async () => env.definition.setup?.(context))) ?? null;
      await store.put(setupKey(input), { value });
    },

    /** Runs the environment's group teardown with what setup returned; the group may have been scored or failed. */
    async teardownGroup(input: GroupHookInput): Promise<void> {
      const { env, context } = hookContext(input);
      const group = await groupResource(store, input, env);
      await heartbeating(async () => env.definition.teardown?.({ ...context, group }));
    },

    /** The step of a turn ({@link stepInto}) as an activity of its own, its tools' results read from their records. */
    async stepTurn(input: TurnInput): Promise<StepTurnResult> {
      const previous = await loadGroupState(store, input.state);
      const state = cloneGroupState(previous);
      await stepInto(deps, input, state, (sample, calls) =>
        Promise.all(calls.map((_, call) => readToolRecord(store, { ...input, sample, call }))),
      );
      const ref = await saveGroupDelta(store, groupKey(input, `turn-${input.turn + 1}`, 'prompt'), input.state, previous, state);
      return { state: ref, active: activeSamples(state) };
    },

    /** Parses the final answer of every trajectory. */
    async parseGroup(input: TurnInput): Promise<StoreRef> {
      const state = await loadGroupState(store, input.state);
      return store.put(groupKey(input, 'parsed'), await parseAll(input, state));
    },

    /** Scores every trajectory with the environment's reward, and asks it for per-turn advantages. */
    async scoreGroup(input: TurnInput & { parsed: StoreRef; judgements?: StoreRef | null }): Promise<ScoreGroupResult> {
      const state = await loadGroupState(store, input.state);
      const parsed = await store.get<unknown[]>(input.parsed);
      const judgements = input.judgements ? await store.get<Record<string, string[]>>(input.judgements) : {};
      const { scores, metrics, perTurn } = await scoreAll(input, state, parsed, judgements);
      if (!perTurn) return { scores, metrics };
      return { scores, metrics, advantages: await store.put(groupKey(input, 'advantages'), perTurn) };
    },

    /**
     * parse → score → (drop when all scores are equal and the run asks so) → assemble in one local activity, for
     * groups with no judge and no teacher between them: one marker and one workflow activation instead of three, and
     * the group's state read once. Each part does what its own activity does (the parsed answers are kept for the
     * viewer); a failure retries the whole, which only repeats deterministic work.
     */
    async finishGroup(input: FinishGroupInput): Promise<FinishGroupResult> {
      const state = await loadGroupState(store, input.state);
      const parsed = await parseAll(input, state);
      await store.put(groupKey(input, 'parsed'), parsed);
      const { scores, metrics, perTurn } = await scoreAll(input, state, parsed, {});
      const scored = { scores, metrics };
      if (dropsForEqualScores(scores, input.ensureScoresAreNotSame)) return { ...scored, assembled: null };
      const generationParams = input.generationParams;
      return {
        ...scored,
        assembled: await assembleScoredGroup(store, input, state, { scores, teacher: null, perTurn: perTurn ?? null, generationParams }),
      };
    },
  };

  async function parseAll(input: GroupAddress, state: GroupState): Promise<unknown[]> {
    const { env, item } = itemOf(environments, input);
    return Promise.all(state.trajectories.map((t, i) => env.definition.parse(lastAssistantText(t), item, trajectoryContext(input, t, i))));
  }

  async function scoreAll(input: GroupAddress, state: GroupState, parsed: unknown[], judgements: Record<string, string[]>) {
    const { env } = itemOf(environments, input);
    const group = await groupResource(store, input, env);
    const configured = deps.judge?.(input.environment);
    const judge = configured ? liveJudge(configured) : judgeOrMissing(undefined, input.environment);
    const results = await Promise.all(
      state.trajectories.map(async (t, i) =>
        toScoreResult(
          await env.definition.score({
            ...trajectoryContext(input, t, i),
            parsed: parsed[i],
            completion: lastAssistantText(t),
            turnRewards: t.turnRewards ?? [],
            judge,
            group,
            judgements,
          }),
        ),
      ),
    );
    for (const [i, r] of results.entries()) {
      if (!Number.isFinite(r.score)) {
        throw ApplicationFailure.nonRetryable(`score of sample ${i} is not a finite number: ${r.score}`, 'EnvironmentError');
      }
    }
    const scores = rescored(
      env.definition,
      results.map((r) => r.score),
      state.trajectories,
      env.config,
    );
    const perTurn = env.definition.advantages?.({
      scores,
      turnRewards: state.trajectories.map((t) => t.turnRewards ?? []),
      config: env.config,
    });
    const metrics = averageMetrics(results.map((r, i) => ({ ...toolMetrics(state.trajectories[i]!, state.executesTools), ...r.metrics })));
    return { scores, metrics, perTurn };
  }
}

export type EnvironmentActivities = ReturnType<typeof createEnvironmentActivities>;

/** The prompt of item i and the initial state of its group's trajectories, in memory (the caller saves it). */
export async function preparedState({ environments }: EnvironmentActivityDeps, input: PrepareGroupInput): Promise<GroupState> {
  const { env, item } = itemOf(environments, input);
  const messages = withThinkingPrompt(env.definition.prompt(item, env.config), env.config);
  const offered = (await env.definition.tools?.(item, env.config)) ?? null;
  return {
    itemIndex: input.itemIndex,
    groupOverrides: env.definition.groupOverrides?.(item, env.config) ?? null,
    tools: offered && offered.length > 0 ? offered.map(toOpenAITool) : null,
    executesTools: offered?.some(isTool) ?? false,
    stop: env.definition.stop ?? null,
    ...(env.config.messages_only ? { messagesOnly: true } : {}),
    trajectories: Array.from({ length: input.groupSize }, (_, sample) => ({
      messages: structuredClone(messages),
      tokens: [],
      masks: [],
      logprobs: [],
      completionTokens: 0,
      finishReason: null,
      done: false,
      ...(env.definition.initialState ? { state: env.definition.initialState(item, sample, env.config) ?? null } : {}),
    })),
  };
}

/**
 * The step of a turn, on `state` in memory (the caller saves it): appends the results of the tools Clotho ran for
 * each unfinished trajectory as `tool` messages (their records from `recordsOf`), then lets the environment answer it
 * (next user turn, a game's observation, done, state, reward). Without a step, an episode that offers executable tools
 * ends at the first turn that calls none.
 */
export async function stepInto(
  { environments, store }: EnvironmentActivityDeps,
  input: Omit<TurnInput, 'state'>,
  state: GroupState,
  recordsOf: (sample: number, calls: readonly unknown[]) => Promise<ToolRecord[]>,
): Promise<void> {
  const { env, item } = itemOf(environments, input);
  const step = env.definition.step;
  if (!step && !state.executesTools) {
    throw ApplicationFailure.nonRetryable(`environment "${input.environment}" has no step`, 'EnvironmentError');
  }
  const group = await groupResource(store, input, env);
  await Promise.all(
    state.trajectories.map(async (trajectory, sample) => {
      if (trajectory.done) return;
      const calls = state.executesTools ? toolCallsOf(trajectory, input.turn, sample).calls : [];
      const records = calls.length > 0 ? await recordsOf(sample, calls) : [];
      const toolMessages = calls.map((call, index) => ({
        role: 'tool' as const,
        tool_call_id: call.id,
        name: call.name,
        content: records[index]!.content,
      }));
      if (records.length > 0) trajectory.state = records.at(-1)!.state;
      for (const record of records) {
        trajectory.toolOutcomes = { ...trajectory.toolOutcomes, [record.outcome]: (trajectory.toolOutcomes?.[record.outcome] ?? 0) + 1 };
      }
      trajectory.messages.push(...toolMessages);
      if (!step) {
        trajectory.done = calls.length === 0;
        return;
      }
      const result = await step(
        {
          item,
          messages: trajectory.messages,
          turn: input.turn,
          sample,
          state: trajectory.state ?? null,
          toolResults: toolMessages,
          group,
          config: env.config,
          ...liveness(),
        },
        env.config,
      );
      trajectory.messages.push(...result.messages);
      trajectory.done = result.done;
      if (result.state !== undefined) trajectory.state = result.state;
      if (result.reward !== undefined) {
        trajectory.turnRewards = [...(trajectory.turnRewards ?? []), result.reward];
        // Messages of earlier records never change in place: the rewarded answer is replaced (see cloneGroupState).
        const answered = lastAssistantIndex(trajectory);
        if (answered >= 0) trajectory.messages[answered] = { ...trajectory.messages[answered]!, reward: result.reward };
      }
    }),
  );
}

export function activeSamples(state: GroupState): number[] {
  return state.trajectories.flatMap((t, i) => (t.done ? [] : [i]));
}

/** The environment's group-level rescoring (a length penalty, say), checked to give one finite score per trajectory. */
function rescored(
  definition: LoadedEnvironment['definition'],
  scores: number[],
  trajectories: Trajectory[],
  config: LoadedEnvironment['config'],
): number[] {
  if (!definition.rescoreGroup) return scores;
  const result = definition.rescoreGroup({
    scores,
    completions: trajectories.map(lastAssistantText),
    completionTokens: trajectories.map((t) => t.completionTokens),
    finishReasons: trajectories.map((t) => t.finishReason ?? 'stop'),
    config,
  });
  if (result.length !== scores.length || !result.every(Number.isFinite)) {
    throw ApplicationFailure.nonRetryable(
      `rescoreGroup must return ${scores.length} finite scores, got ${JSON.stringify(result)}`,
      'EnvironmentError',
    );
  }
  return result;
}

/** Tool calls a trajectory made, by outcome; counted for every environment that runs tools. */
function toolMetrics(t: Trajectory, executesTools: boolean | undefined): Record<string, number> {
  if (!executesTools) return {};
  const outcomes = t.toolOutcomes ?? {};
  return {
    tool_calls: Object.values(outcomes).reduce((a, b) => a + b, 0),
    tool_errors: outcomes.tool_error ?? 0,
    unknown_tool_calls: outcomes.unknown_tool ?? 0,
    invalid_tool_arguments: outcomes.invalid_arguments ?? 0,
  };
}

/** Each metric averaged over the trajectories that report it (a metric only some report is not diluted). */
function averageMetrics(all: Record<string, number>[]): Record<string, number> {
  const sums: Record<string, [number, number]> = {};
  for (const metrics of all) {
    for (const [k, v] of Object.entries(metrics)) {
      const [sum, count] = sums[k] ?? [0, 0];
      sums[k] = [sum + v, count + 1];
    }
  }
  return Object.fromEntries(Object.entries(sums).map(([k, [sum, count]]) => [k, sum / count]));
}
