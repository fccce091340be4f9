import { ApplicationFailure } from '@temporalio/common';
import { executeToolCall, type ToolCallOutcome } from '../env/tools.js';
import { callSignal } from '../inference/call-signal.js';
import { parseToolCalls } from '../inference/tool-calls.js';
import type { StoreRef } from '../schema/rollout.js';
import { cut } from '../schema/text.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { executableTools, groupResource, heartbeating, itemOf, liveness, type EnvironmentActivityDeps } from './environment-context.js';
import { groupKey, lastAssistant, loadGroupState, type GroupAddress, type Trajectory } from './group-state.js';

/** Identifies one tool call: the sample, its turn and the call's place in that turn. */
export interface ToolCallAddress extends GroupAddress {
  turn: number;
  sample: number;
  call: number;
}

export interface CallToolInput extends ToolCallAddress {
  /** The group's state after the turn's generation, which holds the call. */
  state: StoreRef;
  /** The tool's name and arguments, for the workflow history; the activity reads the call itself from the state. */
  name: string;
  arguments: string;
}

/** What the history keeps of a call's result: its outcome and the start of what the model sees. */
export interface CallToolResult {
  outcome: ToolCallOutcome;
  content: string;
}

/** One sample's calls of a turn as the history names them: arguments cut short when long (`generateTurn`'s result). */
export interface TurnToolCalls {
  sample: number;
  calls: { name: string; arguments: string }[];
}

export interface CallTurnToolsInput extends GroupAddress {
  turn: number;
  /** The group's state after the turn's generation, which holds the calls. */
  state: StoreRef;
  calls: TurnToolCalls[];
}

/** One call's result in `callTurnTools`'s result: which call, and what `callTool` returns for it. */
export interface TurnToolCallResult extends CallToolResult {
  sample: number;
  call: number;
  name: string;
}

/** A call's result as recorded in the store: what the model sees, and the trajectory's state slot after the call. */
export interface ToolRecord {
  name: string;
  arguments: Record<string, unknown>;
  outcome: ToolCallOutcome;
  content: string;
  state: unknown;
}

/** Results longer than this reach the history cut short; the model always sees the whole result (from the store). */
const HISTORY_PREVIEW_CHARS = 1024;

/** A call's result as the history shows it. */
export const preview = (text: string) =>
  text.length <= HISTORY_PREVIEW_CHARS ? text : `${text.slice(0, HISTORY_PREVIEW_CHARS)}… (${text.length} chars)`;

/** Arguments longer than this reach the history cut short. */
const ARGUMENTS_PREVIEW_CHARS = 512;

/** A call's arguments as the history shows them. */
export const argumentsPreview = (args: Record<string, unknown>) => cut(JSON.stringify(args), ARGUMENTS_PREVIEW_CHARS);

export const toolRecordKey = (address: ToolCallAddress) =>
  groupKey(address, `turn-${address.turn}`, `sample-${address.sample}`, `call-${address.call}`);

/** The recorded result of one call; it exists once the call's activity completed. */
export function readToolRecord(store: TrajectoryStore, address: ToolCallAddress): Promise<ToolRecord> {
  return store.get<ToolRecord>(toolRecordKey(address));
}

/** The tool calls of a trajectory's last assistant turn, with ids that are the same on every read. */
export function toolCallsOf(trajectory: Trajectory, turn: number, sample: number) {
  return parseToolCalls(lastAssistant(trajectory) ?? {}, `call-${turn}-${sample}`);
}

/**
 * The `tool` step: each call the model makes is its own activity, so a flaky tool is retried alone and shows up in
 * the history by name with its arguments and result. The contract:
 * - a call whose result was recorded (under a key per episode, turn and call, before the activity completes) is never
 *   executed again: a retry, a resumed run and a replay return the record;
 * - a call interrupted before its result was recorded (its worker killed mid-call) is executed again with the same
 *   `idempotencyKey`, so a tool that honours the key runs at most once and one that does not runs at least once;
 * - of two attempts that ran a call side by side (the first timed out while its tool went on), the first record
 *   written stays: an attempt that was cancelled, or finds a record when its tool returns, writes none.
 * The activity heartbeats while a call runs, so a call on a dead worker is retried after the step's heartbeat
 * timeout (10 s by default), not its start-to-close timeout.
 */
export function createToolCallActivities(deps: EnvironmentActivityDeps) {
  const activities = {
    async callTool(input: CallToolInput): Promise<CallToolResult> {
      const trajectory = (await loadGroupState(deps.store, input.state)).trajectories[input.sample]!;
      const record = await runToolCall(deps, input, trajectory);
      return { outcome: record.outcome, content: preview(record.content) };
    },

    /**
     * The `tool` step configured local (`--steps.tool.local true`): all of a turn's calls in one local activity, samples
     * side by side and each sample's calls in order, as the workflow runs `callTool`s. Each call keeps its record, so a
     * retry (or a replay after a crash, which runs a local activity again) returns what a call already did.
     */
    async callTurnTools({ calls, ...turn }: CallTurnToolsInput): Promise<TurnToolCallResult[]> {
      const bySample = await Promise.all(
        calls.map(async ({ sample, calls: ofSample }) => {
          const results: TurnToolCallResult[] = [];
          for (const [call, { name, arguments: args }] of ofSample.entries()) {
            results.push({ sample, call, name, ...(await activities.callTool({ ...turn, sample, call, name, arguments: args })) });
          }
          return results;
        }),
      );
      return bySample.flat();
    },
  };
  return activities;
}

/**
 * Runs call `input.call` of a trajectory's turn and records its result, or returns the record an earlier attempt
 * left (see {@link createToolCallActivities} for the contract). `before` is the record of the call before it in the
 * same turn, when the caller holds it: each call starts from the state the one before left. `fresh` says no earlier
 * attempt can have run this call (its caller knows), so there is no record to look for; `beforeWrite` runs before the
 * record is written and throws when this attempt must not write it (takeTurns' owner check).
 */
export async function runToolCall(
  { environments, store }: EnvironmentActivityDeps,
  input: ToolCallAddress,
  trajectory: Trajectory,
  { before, fresh = false, beforeWrite }: { before?: ToolRecord; fresh?: boolean; beforeWrite?: () => Promise<void> } = {},
): Promise<ToolRecord> {
  const key = toolRecordKey(input);
  const recorded = fresh ? undefined : await store.tryGet<ToolRecord>(key);
  if (recorded) return recorded;
  const { env, item } = itemOf(environments, input);
  const call = toolCallsOf(trajectory, input.turn, input.sample).calls[input.call];
  if (!call)
    throw ApplicationFailure.nonRetryable(`sample ${input.sample} made no call ${input.call} in turn ${input.turn}`, 'EnvironmentError');
  // Calls of one turn run in order, each from the state the one before left.
  const previous =
    input.call === 0 ? (trajectory.state ?? null) : (before ?? (await readToolRecord(store, { ...input, call: input.call - 1 }))).state;
  const { signal, heartbeat } = liveness();
  // A signal of its own, released when the call ends: a turns activity makes many calls, and a client that leaves its
  // abort listener on the activity's signal (MCP's does) would pile them up there.
  const abort = callSignal([signal]);
  const context = {
    item,
    state: structuredClone(previous),
    group: await groupResource(store, input, env),
    sample: input.sample,
    turn: input.turn,
    call: input.call,
    idempotencyKey: key,
    signal: abort.signal,
    heartbeat,
  };
  let result;
  try {
    const tools = await executableTools(env, item);
    result = await heartbeating(() => executeToolCall(tools, call, context));
  } catch (error) {
    // Not the tool's answer to the model but a broken tool (a dead MCP server, a timeout): retried, never a reward.
    const message = error instanceof Error ? error.message : String(error);
    throw ApplicationFailure.retryable(`tool ${call.name} failed: ${message}`, 'ToolFailure');
  } finally {
    abort.release();
  }
  // A call's first record is its record: an attempt Temporal gave up on (cancelled, or overtaken by one that recorded
  // the call meanwhile) leaves it as the history shows it and the model sees it (issue 38, finding 1).
  signal.throwIfAborted();
  await beforeWrite?.();
  const recordedMeanwhile = fresh ? undefined : await store.tryGet<ToolRecord>(key);
  if (recordedMeanwhile) return recordedMeanwhile;
  const record: ToolRecord = { name: call.name, arguments: call.arguments, ...result, state: context.state ?? null };
  await store.put(key, record);
  return record;
}

/** Runs a trajectory's calls of a turn in order (see {@link runToolCall}); their records, in order. */
export async function runTurnCalls(
  deps: EnvironmentActivityDeps,
  input: Omit<ToolCallAddress, 'call'>,
  trajectory: Trajectory,
  { fresh, beforeWrite }: { fresh: boolean; beforeWrite?: () => Promise<void> },
): Promise<ToolRecord[]> {
  const records: ToolRecord[] = [];
  const { calls } = toolCallsOf(trajectory, input.turn, input.sample);
  for (let call = 0; call < calls.length; call++) {
    const before = records.at(-1);
    records.push(
      await runToolCall(deps, { ...input, call }, trajectory, {
        ...(before ? { before } : {}),
        fresh,
        ...(beforeWrite ? { beforeWrite } : {}),
      }),
    );
  }
  return records;
}

export type ToolCallActivities = ReturnType<typeof createToolCallActivities>;
