import { ApplicationFailure } from '@temporalio/common';
import { toScoreResult } from '../env/define.js';
import { environmentNamed, type LoadedEnvironment } from '../env/loaded.js';
import type { StoreRef } from '../schema/rollout.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { groupKey, lastAssistantText, type GroupAddress, type GroupState } from './group-state.js';

export interface EnvironmentActivityDeps {
  environments: Record<string, LoadedEnvironment>;
  store: TrajectoryStore;
}

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
}

/** Activities that run environment code (clotho-env queue): prompts, multi-turn steps, parsing, scoring. */
export function createEnvironmentActivities({ environments, store }: EnvironmentActivityDeps) {
  const itemOf = (address: GroupAddress) => {
    const env = environmentNamed(environments, address.environment);
    return { env, item: env.items.get(address.itemIndex % env.items.size) };
  };

  return {
    /** Builds the prompt of item i and the initial state of its group's trajectories. */
    async prepareGroup(input: PrepareGroupInput): Promise<StoreRef> {
      const { env, item } = itemOf(input);
      const messages = env.definition.prompt(item, env.config);
      const state: GroupState = {
        itemIndex: input.itemIndex,
        groupOverrides: env.definition.groupOverrides?.(item, env.config) ?? null,
        tools: env.definition.tools?.(item, env.config) ?? null,
        stop: env.definition.stop ?? null,
        trajectories: Array.from({ length: input.groupSize }, () => ({
          messages: structuredClone(messages),
          tokens: [],
          masks: [],
          logprobs: [],
          completionTokens: 0,
          finishReason: null,
          done: false,
        })),
      };
      return store.put(groupKey(input, 'turn-0', 'prompt'), state);
    },

    /** Lets the environment answer each unfinished trajectory's last assistant turn (tool results, next user turn). */
    async stepTurn(input: TurnInput): Promise<StepTurnResult> {
      const { env, item } = itemOf(input);
      const step = env.definition.step;
      if (!step) throw ApplicationFailure.nonRetryable(`environment "${input.environment}" has no step`, 'EnvironmentError');
      const state = await store.get<GroupState>(input.state);
      await Promise.all(
        state.trajectories.map(async (trajectory) => {
          if (trajectory.done) return;
          const result = await step({ item, messages: trajectory.messages, turn: input.turn }, env.config);
          trajectory.messages.push(...result.messages);
          trajectory.done = result.done;
        }),
      );
      const ref = await store.put(groupKey(input, `turn-${input.turn + 1}`, 'prompt'), state);
      return { state: ref, active: activeSamples(state) };
    },

    /** Parses the final answer of every trajectory. */
    async parseGroup(input: TurnInput): Promise<StoreRef> {
      const { env, item } = itemOf(input);
      const state = await store.get<GroupState>(input.state);
      const parsed = state.trajectories.map((t) => env.definition.parse(lastAssistantText(t), item));
      return store.put(groupKey(input, 'parsed'), parsed);
    },

    /** Scores every trajectory with the environment's reward. */
    async scoreGroup(input: TurnInput & { parsed: StoreRef }): Promise<ScoreGroupResult> {
      const { env, item } = itemOf(input);
      const state = await store.get<GroupState>(input.state);
      const parsed = await store.get<unknown[]>(input.parsed);
      const results = await Promise.all(
        state.trajectories.map(async (t, i) =>
          toScoreResult(
            await env.definition.score({
              item,
              parsed: parsed[i],
              completion: lastAssistantText(t),
              messages: t.messages,
              finishReason: t.finishReason ?? 'stop',
            }),
          ),
        ),
      );
      for (const [i, r] of results.entries()) {
        if (!Number.isFinite(r.score)) {
          throw ApplicationFailure.nonRetryable(`score of sample ${i} is not a finite number: ${r.score}`, 'EnvironmentError');
        }
      }
      return { scores: results.map((r) => r.score), metrics: averageMetrics(results.map((r) => r.metrics ?? {})) };
    },
  };
}

export type EnvironmentActivities = ReturnType<typeof createEnvironmentActivities>;

export function activeSamples(state: GroupState): number[] {
  return state.trajectories.flatMap((t, i) => (t.done ? [] : [i]));
}

function averageMetrics(all: Record<string, number>[]): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const metrics of all) for (const [k, v] of Object.entries(metrics)) sums[k] = (sums[k] ?? 0) + v;
  return Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, v / all.length]));
}
