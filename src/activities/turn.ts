import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { Sampling, StoreRef } from '../schema/rollout.js';
import { TURNS_WINDOW_MS } from '../schema/turns.js';
import { liveness, type EnvironmentActivityDeps } from './environment-context.js';
import {
  activeSamples,
  createEnvironmentActivities,
  preparedState,
  stepInto,
  type FinishGroupInput,
  type FinishGroupResult,
} from './environment.js';
import {
  cloneGroupState,
  groupKey,
  groupWeightsVersion,
  loadGroupState,
  saveGroupBase,
  saveGroupDelta,
  type GroupAddress,
  type GroupState,
} from './group-state.js';
import { generateInto, type InferenceActivityDeps } from './inference.js';
import { argumentsPreview, preview, runTurnCalls, type ToolRecord, type TurnToolCallResult } from './tool-calls.js';

export interface TakeTurnsInput {
  runId: string;
  environment: string;
  itemIndex: number;
  /** The first turn to take. */
  turn: number;
  /** The group's state before that turn; null on a group's first turn, which prepares it first. */
  state: StoreRef | null;
  groupSize: number;
  sampling: Sampling;
  maxTokenLength: number;
  maxTurns: number;
  /** Finish the group in the same activity when the episode ends (no judge or teacher between). */
  finish?: Pick<FinishGroupInput, 'ensureScoresAreNotSame' | 'generationParams'>;
}

/** One tool call as the history shows it: its turn and place, its arguments and what it answered, both cut short. */
export type TurnCall = TurnToolCallResult & { turn: number; arguments: string };

export interface TakeTurnsResult {
  state: StoreRef;
  /** Turns taken. */
  turns: number;
  /** Completion tokens of each trajectory so far. */
  completionTokens: number[];
  /** Completion tokens these turns generated (the worker's token metrics count these). */
  generatedTokens: number;
  /** Whether the episode takes another turn. */
  next: boolean;
  /** The tool calls of the turns taken, for the history. */
  calls: TurnCall[];
  /** The finished group, when the episode ended and the input asked to finish it. */
  finished?: FinishGroupResult;
  /** The oldest weights version that generated any turn of the group so far, when the server reports versions. */
  weightsVersion?: number;
}

/**
 * An episode's turns as local activities (the default placement, issue 25): each turn is generate → the tool calls →
 * step, and one activity takes turns for up to {@link TURNS_WINDOW_MS}. A turn writes one state record as soon as its
 * completions arrive (`turn-<t>/generated`, holding the step before it too), which is also their checkpoint; each tool
 * call records its result before the next starts; the activity's last step is written as `turn-<t+1>/prompt`. A
 * retry, or a replay after a crash that runs the activity again from its first turn, reads each turn's record instead
 * of asking the model again and each call's record instead of running it again (test/e2e/tool-crash.test.ts).
 */
export function createTurnActivities(deps: InferenceActivityDeps & EnvironmentActivityDeps) {
  const environment = createEnvironmentActivities(deps);
  const { store } = deps;
  return {
    async takeTurns({ finish, maxTurns, groupSize, turn: first, state: initial, ...input }: TakeTurnsInput): Promise<TakeTurnsResult> {
      const started = performance.now();
      const address = { runId: input.runId, environment: input.environment, itemIndex: input.itemIndex };
      const owns = await claimTurns(address);
      const calls: TurnCall[] = [];
      let generatedTokens = 0;
      // The newest record written and the state it holds; `state` runs ahead of it in memory between records.
      let ref = initial;
      let written = initial ? await loadGroupState(store, initial) : null;
      let state = written ? cloneGroupState(written) : null;
      // Whether an earlier attempt may have taken this turn: the activity's first turn may be one it took, and a
      // turn after a turn found taken; a turn after one taken here never (the records are written in turn order).
      let resumed = true;
      for (let turn = first; ; turn++) {
        const at = { ...input, turn, multiTurn: maxTurns > 1 };
        const generatedKey = groupKey(address, `turn-${turn}`, 'generated');
        resumed &&= (await store.tryGet(generatedKey)) !== undefined;
        if (resumed) {
          state = cloneGroupState(await loadGroupState(store, generatedKey));
        } else {
          let prepared: GroupState | null = null;
          if (!state) state = cloneGroupState((prepared = await preparedState(deps, { ...address, groupSize })));
          try {
            generatedTokens += await generateInto(deps, at, state, { oneRequestUnchecked: true });
          } catch (error) {
            // A group that fails before its first record still shows its prompt (clotho view, inspect).
            if (
              prepared &&
              (await owns().then(
                () => true,
                () => false,
              ))
            ) {
              await saveGroupBase(store, groupKey(address, 'turn-0', 'prompt'), prepared);
            }
            throw error;
          }
          await owns();
          await (ref && written ? saveGroupDelta(store, generatedKey, ref, written, state) : saveGroupBase(store, generatedKey, state));
        }
        ref = { key: generatedKey };
        written = state;
        state = cloneGroupState(written);
        const steps = activeSamples(state).length > 0 && turn + 1 < maxTurns;
        const next = steps && (await toolsAndStep(at, state, calls, !resumed, owns));
        if (next && performance.now() - started < TURNS_WINDOW_MS) continue;
        // The next turn's record would have carried this step; without one, it is a record of its own.
        if (steps) {
          await owns();
          ref = await saveGroupDelta(store, groupKey(address, `turn-${turn + 1}`, 'prompt'), ref, written, state);
        }
        const weightsVersion = groupWeightsVersion(state);
        const result: TakeTurnsResult = {
          state: ref,
          turns: turn - first + 1,
          completionTokens: state.trajectories.map((t) => t.completionTokens),
          generatedTokens,
          next,
          calls,
          ...(weightsVersion === undefined ? {} : { weightsVersion }),
        };
        if (next || !finish) return result;
        await owns();
        return { ...result, finished: await environment.finishGroup({ ...address, turn, state: ref, ...finish }) };
      }
    },
  };

  /**
   * Makes this run the owner of the group's turn records, and returns the check each write makes first (issue 38,
   * finding 1). Two runs of one group's takeTurns can overlap: a worker cut off from Temporal goes on with its run
   * while its workflow task times out and another worker's replay runs the activity again (no cancellation reaches
   * the first), or a run that ignored its cancellation goes on beside its retry. The run that started last is the one
   * Temporal will keep; an earlier one that finds another owner, or its cancellation, stops before writing: a turn's
   * record is a delta on the record before it, by key, and a late write there would change the turns built on it.
   */
  async function claimTurns(address: GroupAddress): Promise<() => Promise<void>> {
    const key = groupKey(address, 'turns-owner');
    const owner = randomUUID();
    const { signal } = liveness();
    await store.put(key, { owner });
    return async () => {
      signal.throwIfAborted();
      if ((await store.tryGet<{ owner: string }>(key))?.owner === owner) return;
      throw ApplicationFailure.retryable(
        `a later run of this group's turns took them over (this run's workflow task timed out); it stops without writing`,
        'TurnsTakenOver',
      );
    };
  }

  /**
   * The turn's tool calls (appended to `calls`) and step, on `state` in memory; `fresh` when no earlier attempt can have
   * run the calls; `beforeWrite` before each call's record. Whether another turn follows.
   */
  async function toolsAndStep(
    input: Parameters<typeof generateInto>[1],
    state: GroupState,
    calls: TurnCall[],
    fresh: boolean,
    beforeWrite: () => Promise<void>,
  ): Promise<boolean> {
    const records = new Map<number, ToolRecord[]>();
    if (state.executesTools) {
      await Promise.all(
        activeSamples(state).map(async (sample) => {
          records.set(sample, await runTurnCalls(deps, { ...input, sample }, state.trajectories[sample]!, { fresh, beforeWrite }));
        }),
      );
      for (const [sample, ofSample] of [...records].sort((a, b) => a[0] - b[0]))
        calls.push(...ofSample.map((record, call) => shown(input.turn, sample, call, record)));
    }
    await stepInto(deps, input, state, async (sample) => records.get(sample) ?? []);
    return activeSamples(state).length > 0;
  }
}

export type TurnActivities = ReturnType<typeof createTurnActivities>;

const shown = (turn: number, sample: number, call: number, record: ToolRecord): TurnCall => ({
  turn,
  sample,
  call,
  name: record.name,
  arguments: argumentsPreview(record.arguments),
  outcome: record.outcome,
  content: preview(record.content),
});
