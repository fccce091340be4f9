import { ApplicationFailure } from '@temporalio/common';
import type { JudgeRequest } from '../env/define.js';
import type { StoreRef } from '../schema/rollout.js';
import { groupResource, itemOf, liveJudge, type EnvironmentActivityDeps } from './environment-context.js';
import { groupKey, lastAssistantText, loadGroupState, type GroupAddress } from './group-state.js';

export interface JudgeGroupInput extends GroupAddress {
  state: StoreRef;
  parsed: StoreRef;
}

/**
 * The `judge` step (LLM queue): asks the judge model the questions the environment's `judge` hook puts about the
 * group, and keeps the answers for `score` (`judgements`). Each answered question is checkpointed, so a retry asks
 * only what is still missing; a judge that keeps failing fails the group with its error, never a reward.
 */
export function createJudgeActivities({ environments, store, judge }: EnvironmentActivityDeps) {
  return {
    async judgeGroup(input: JudgeGroupInput): Promise<StoreRef> {
      const { env, item } = itemOf(environments, input);
      const configured = judge?.(input.environment);
      if (!configured) {
        throw ApplicationFailure.nonRetryable(
          `environment "${input.environment}" asks a judge model, but none is configured: set --judge.base_url (and --judge.model_name)`,
          'ConfigError',
        );
      }
      const client = liveJudge(configured);
      const state = await loadGroupState(store, input.state);
      const parsed = await store.get<unknown[]>(input.parsed);
      const requests: JudgeRequest[] =
        (await env.definition.judge?.({
          item,
          config: env.config,
          completions: state.trajectories.map(lastAssistantText),
          parsed,
          messages: state.trajectories.map((t) => t.messages),
          group: await groupResource(store, input, env),
        })) ?? [];
      const ids = new Set<string>();
      for (const request of requests) {
        if (ids.has(request.id))
          throw ApplicationFailure.nonRetryable(`judge request id "${request.id}" is used twice`, 'EnvironmentError');
        ids.add(request.id);
      }
      const judgements: Record<string, string[]> = {};
      await Promise.all(
        requests.map(async (request, i) => {
          const key = groupKey(input, 'judge', `request-${i}`);
          const saved = await store.tryGet<string[]>(key);
          const answers =
            saved ??
            (await client.complete(request.messages, {
              n: request.n ?? 1,
              ...(request.maxTokens === undefined ? {} : { maxTokens: request.maxTokens }),
              temperature: request.temperature ?? 0,
            }));
          if (!saved) await store.put(key, answers);
          judgements[request.id] = answers;
        }),
      );
      return store.put(groupKey(input, 'judgements'), judgements);
    },
  };
}

export type JudgeActivities = ReturnType<typeof createJudgeActivities>;
