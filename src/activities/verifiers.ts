import { z } from 'zod';
import { oldestWeightsVersion } from '../inference/weights-version.js';
import type { StoreRef } from '../schema/rollout.js';
import { VerifiersResultSchema, type VerifiersResult } from '../schema/verifiers.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { groupKey, type GroupAddress, type GroupState, type Trajectory } from './group-state.js';
import { sessionTrajectory, type HarnessSession } from './harness-session.js';
import { assembleScoredGroup } from './trajectories.js';

/**
 * A verifiers episode's records (issue 39), under its group's key: each model call of trace `<agent>-<n>` of sample s
 * (`…/verifiers/sample-<s>/<agent>-<n>/call-<k>`, written by the session before its answer reaches the episode), the
 * sequence each trace's session grew in the attempt that finished (`…/sample-<s>/attempt-<a>/<agent>-<n>`), and the
 * finished episode's result (`…/sample-<s>/result`: written last, so a result is an episode whose sequences are kept).
 */
export const verifiersKey = (address: GroupAddress, sample: number, ...parts: string[]) =>
  groupKey(address, 'verifiers', `sample-${sample}`, ...parts);

/** One trace's sequence as its session left it: the trajectory and how its calls went. */
export const VerifiersSequenceSchema = z.object({
  trajectory: z.custom<Trajectory>((value) => typeof value === 'object' && value !== null),
  /** The tools its last call offered, OpenAI's format. */
  tools: z.array(z.record(z.string(), z.unknown())).nullable(),
  messagesOnly: z.boolean(),
  calls: z.number().int(),
  replayed: z.number().int(),
  diverged: z.array(z.object({ call: z.number().int(), reason: z.string() })),
});
export type VerifiersSequence = z.infer<typeof VerifiersSequenceSchema>;

/** Stop conditions of verifiers' that cut a trace short (`Trace.is_truncated`): trained with no advantage, as Atropos's. */
const TRUNCATING_STOPS = new Set(['max_turns', 'max_input_tokens', 'max_output_tokens', 'max_total_tokens', 'compaction_failed']);

/** The sequence a trace's session grew: the last call's conversation with its answer, and the tokens of its sequence. */
export function sequenceOf(session: HarnessSession, stop: string | null, tools: Record<string, unknown>[] | null): VerifiersSequence {
  const truncated = (stop !== null && TRUNCATING_STOPS.has(stop)) || session.lastNode?.finishReason === 'length';
  const trajectory = sessionTrajectory(session, { truncated });
  return {
    trajectory,
    tools,
    messagesOnly: session.state === null,
    calls: session.calls,
    replayed: session.replayed,
    diverged: session.diverged,
  };
}

/** What gathering a verifiers group answers: its group (none when no trace asked the model anything) and its counts. */
export interface GatherVerifiersResult {
  group: StoreRef | null;
  scores: number[];
  /** Each reward's raw score (`reward/<name>`) and each metric (`metric/<name>`), averaged over the trainable traces. */
  metrics: Record<string, number>;
  tokens: number;
  longestSequence: number;
  /** Model calls of the group's longest trace. */
  turns: number;
  weightsVersion?: number;
}

/** Each reward's score and each metric of some traces, averaged over the traces that have it. */
export function traceMetrics(traces: VerifiersResult['traces']): Record<string, number> {
  const sums: Record<string, { sum: number; n: number }> = {};
  const add = (name: string, value: number) => {
    const entry = (sums[name] ??= { sum: 0, n: 0 });
    entry.sum += value;
    entry.n++;
  };
  for (const trace of traces) {
    for (const [name, reward] of Object.entries(trace.rewards)) add(`reward/${name}`, reward.score);
    for (const [name, value] of Object.entries(trace.metrics)) add(`metric/${name}`, value);
  }
  return Object.fromEntries(Object.entries(sums).map(([name, { sum, n }]) => [name, sum / n]));
}

/**
 * `gatherVerifiers` (local, on the run's workflow queue): the Atropos group of a task's finished episodes. One
 * sequence per trainable trace that asked the model anything (its tokens, masks and logprobs as the session recorded
 * them, or its messages alone in a messages-only run), scored with the trace's reward; the tools it was offered go
 * with it; each reward's score and each metric are the group's metrics.
 */
export function createVerifiersActivities({ store }: { store: TrajectoryStore }) {
  return {
    async gatherVerifiers(
      input: GroupAddress & { groupSize: number; generationParams?: Record<string, unknown> },
    ): Promise<GatherVerifiersResult> {
      const results = await Promise.all(
        Array.from({ length: input.groupSize }, async (_, sample) => ({
          sample,
          result: VerifiersResultSchema.parse(await store.get(verifiersKey(input, sample, 'result'))),
        })),
      );
      const trainable = results.flatMap(({ sample, result }) =>
        result.traces.filter((trace) => trace.trainable).map((trace) => ({ sample, attempt: result.attempt, trace })),
      );
      const sequences = await Promise.all(
        trainable.map(async ({ sample, attempt, trace }) => {
          const raw = await store.tryGet(verifiersKey(input, sample, `attempt-${attempt}`, trace.key));
          return { trace, sequence: raw === undefined ? null : VerifiersSequenceSchema.parse(raw) };
        }),
      );
      const kept = sequences.filter(({ sequence }) => sequence !== null && sequence.calls > 0) as {
        trace: VerifiersResult['traces'][number];
        sequence: VerifiersSequence;
      }[];
      const metrics = traceMetrics(trainable.map(({ trace }) => trace));
      const turns = Math.max(0, ...kept.map(({ sequence }) => sequence.calls));
      if (kept.length === 0) return { group: null, scores: [], metrics, tokens: 0, longestSequence: 0, turns };
      const state: GroupState = {
        itemIndex: input.itemIndex,
        trajectories: kept.map(({ sequence }) => sequence.trajectory),
        groupOverrides: null,
        tools: kept.find(({ sequence }) => sequence.tools)?.sequence.tools ?? null,
        stop: null,
        ...(kept.every(({ sequence }) => sequence.messagesOnly) ? { messagesOnly: true } : {}),
      };
      const scores = kept.map(({ trace }) => trace.reward);
      const assembled = await assembleScoredGroup(store, input, state, {
        scores,
        teacher: null,
        perTurn: null,
        generationParams: input.generationParams ?? {},
      });
      const weightsVersion = oldestWeightsVersion(kept.map(({ sequence }) => sequence.trajectory.weightsVersion));
      return {
        group: assembled.group,
        scores,
        metrics,
        tokens: assembled.tokens,
        longestSequence: assembled.longestSequence,
        turns,
        ...(weightsVersion === undefined ? {} : { weightsVersion }),
      };
    },
  };
}

export type VerifiersGatherActivities = ReturnType<typeof createVerifiersActivities>;
