import { ApplicationFailure } from '@temporalio/activity';
import { toApplicationFailure } from '../inference/errors.js';
import type { StoreRef } from '../schema/rollout.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { liveness } from './environment-context.js';
import { groupKey, loadGroupState, type GroupAddress } from './group-state.js';

/** Top-k logprobs of a teacher at every position of a token sequence (ATROPOS-API.md §5). */
export interface TeacherClient {
  promptLogprobs(
    tokens: number[],
    topK: number,
    options: { signal?: AbortSignal; onProgress?: () => void },
  ): Promise<{ tokenIds: number[][]; logprobs: number[][] }>;
}

export interface TeacherInput extends GroupAddress {
  state: StoreRef;
  topK: number;
}

/** What the teacher step writes: per sequence, per position, the teacher's top-k ids and logprobs. */
export interface TeacherOutput {
  distill_token_ids: number[][][];
  distill_logprobs: number[][][];
}

export interface TeacherActivityDeps {
  /** The teacher of each environment; undefined when an environment has none. */
  teacher: (environment: string) => TeacherClient | undefined;
  store: TrajectoryStore;
}

/** The teacher-logprob step (clotho-llm queue). */
export function createTeacherActivities({ teacher, store }: TeacherActivityDeps) {
  return {
    /** Null when the group's overrides skip the teacher (`skip_teacher_top_k`, or `teacher_top_k` of -1 or less). */
    async teacherLogprobs(input: TeacherInput): Promise<StoreRef | null> {
      const state = await loadGroupState(store, input.state);
      const overrides = state.groupOverrides ?? {};
      const topK = typeof overrides.teacher_top_k === 'number' ? overrides.teacher_top_k : input.topK;
      if (overrides.skip_teacher_top_k === true || topK <= -1) return null;
      const client = teacher(input.environment);
      if (!client) {
        throw ApplicationFailure.nonRetryable(
          `teacher logprobs are enabled for "${input.environment}" but no teacher server is configured (--teacher.base_url)`,
          'TeacherNotConfigured',
        );
      }
      const { signal, heartbeat } = liveness();
      const results = await Promise.all(
        state.trajectories.map(async (t) => {
          try {
            return await client.promptLogprobs(t.tokens, topK, {
              signal,
              onProgress: () => heartbeat(),
            });
          } catch (error) {
            throw toApplicationFailure(error);
          }
        }),
      );
      for (const [i, r] of results.entries()) {
        const length = state.trajectories[i]!.tokens.length;
        if (r.tokenIds.length !== length || r.logprobs.length !== length) {
          throw ApplicationFailure.retryable(
            `teacher returned ${r.tokenIds.length} positions for a sequence of ${length} tokens`,
            'MalformedResponse',
          );
        }
      }
      const output: TeacherOutput = {
        distill_token_ids: results.map((r) => r.tokenIds),
        distill_logprobs: results.map((r) => r.logprobs),
      };
      return store.put(groupKey(input, 'teacher'), output);
    },
  };
}

export type TeacherActivities = ReturnType<typeof createTeacherActivities>;
