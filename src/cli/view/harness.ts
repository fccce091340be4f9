import { z } from 'zod';
import { groupKey, loadGroupState, type GroupAddress, type GroupState, type Trajectory } from '../../activities/group-state.js';
import { harnessKey, type HarnessProgress } from '../../activities/harness.js';
import { CallRecordSchema } from '../../activities/harness-session.js';
import { HarnessOutcomeSchema, type HarnessOutcome } from '../../env/harness.js';
import type { TrajectoryStore } from '../../store/trajectory-store.js';
import type { RawGroup } from './model.js';

/**
 * A harness rollout's model calls and outcome as `clotho inspect` and the viewer show them, read from its records
 * (`<group>/harness/sample-<s>/call-<k>` and `…/result`, src/activities/harness.ts).
 */

/**
 * How a call was answered on the attempt that finished the rollout (or the one running): `replayed` from the record
 * of an earlier attempt, `live` by the model; `recorded` where that is not known (a retry runs, and its heartbeat has
 * not counted the call: it may be an earlier attempt's record, still to be replayed).
 */
export type CallMark = 'replayed' | 'live' | 'recorded';

/** One model call, with what the pages show of it. */
export interface HarnessCall {
  call: number;
  mark: CallMark;
  /** The last message of the request, cut short (`user: <returncode>0</returncode> …`). */
  summary: string;
  promptTokens: number;
  completionTokens: number;
  /** What the model took when the call was recorded (a replayed call's is its first attempt's). */
  modelMs: number;
  /** The start of the model's reply. */
  reply: string;
}

/** One harness rollout: its calls in order, and its outcome once it finished (null before). */
export interface HarnessSample {
  sample: number;
  outcome: HarnessOutcome | null;
  calls: HarnessCall[];
}

const ShownCallSchema = CallRecordSchema.pick({ call: true, summary: true, promptTokens: true, modelMs: true }).extend({
  completion: CallRecordSchema.shape.completion.pick({ text: true, tokenIds: true }),
});

/** Only the outcome of a rollout's record is read; its trajectory is the group's. */
const ResultSchema = z.object({ outcome: HarnessOutcomeSchema });

const REPLY = 160;

/** Parses a store value or throws naming its key and the first problem. */
function parseAt<T>(schema: z.ZodType<T>, value: unknown, key: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw new Error(`${key}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
}

/** What a group's harness left in the store: the call numbers recorded under each sample, and whether it was gathered. */
async function listHarness(
  store: TrajectoryStore,
  address: GroupAddress,
  sample?: number,
): Promise<{ samples: Map<number, number[]>; gathered: boolean }> {
  const root = `${groupKey(address, 'harness')}/`;
  const samples = new Map<number, number[]>();
  let gathered = false;
  for await (const { key } of store.list(sample === undefined ? groupKey(address, 'harness') : harnessKey(address, sample))) {
    const part = key.startsWith(root) ? key.slice(root.length) : '';
    gathered ||= part === 'gathered';
    const match = /^sample-(\d+)\/(?:call-(\d+)|result)$/.exec(part);
    if (!match) continue;
    const calls = samples.get(Number(match[1])) ?? [];
    if (match[2] !== undefined) calls.push(Number(match[2]));
    samples.set(Number(match[1]), calls);
  }
  return { samples, gathered };
}

/**
 * One harness rollout from the store: its outcome, and its calls marked replayed or live by that outcome (a retried
 * attempt replays a prefix of the calls, `outcome.replayed` of them). Before the rollout ends, `attempt` and its
 * `progress` (the running attempt's heartbeat) say what is known: a first attempt's calls are all live; a retry's are
 * as its heartbeat counted them, and those past it may be an earlier attempt's. Null when the store holds nothing of
 * the rollout.
 */
export async function readHarnessSample(
  store: TrajectoryStore,
  address: GroupAddress,
  sample: number,
  running: { attempt?: number; progress?: HarnessProgress } = {},
  recorded?: number[],
): Promise<HarnessSample | null> {
  const resultKey = harnessKey(address, sample, 'result');
  const raw = await store.tryGet(resultKey);
  const outcome = raw === undefined ? null : parseAt(ResultSchema, raw, resultKey).outcome;
  // A finished rollout's calls are 0 … calls-1; an earlier attempt may have left records past them.
  const numbers = outcome
    ? Array.from({ length: outcome.calls }, (_, k) => k)
    : (recorded ?? (await listHarness(store, address, sample)).samples.get(sample) ?? []).slice().sort((a, b) => a - b);
  if (!outcome && numbers.length === 0) return null;
  const mark = (k: number): CallMark => {
    if (!outcome && running.attempt === 1) return 'live';
    const known = outcome ?? running.progress;
    if (!known || k >= known.calls) return 'recorded';
    return k < known.replayed ? 'replayed' : 'live';
  };
  const calls = await Promise.all(
    numbers.map(async (k): Promise<HarnessCall> => {
      const key = harnessKey(address, sample, `call-${k}`);
      const record = parseAt(ShownCallSchema, await store.get(key), key);
      const flat = record.completion.text.replace(/\s+/g, ' ').trim();
      return {
        call: record.call,
        mark: mark(k),
        summary: record.summary,
        promptTokens: record.promptTokens,
        completionTokens: record.completion.tokenIds.length,
        modelMs: record.modelMs,
        reply: flat.length > REPLY ? `${flat.slice(0, REPLY)}…` : flat,
      };
    }),
  );
  return { sample, outcome, calls };
}

/** Every harness rollout of a group that the store holds, by sample; empty for a group that ran no harness. */
export async function readHarnessSamples(store: TrajectoryStore, address: GroupAddress): Promise<HarnessSample[]> {
  const found = (await listHarness(store, address)).samples;
  const samples = await Promise.all(
    [...found.keys()].sort((a, b) => a - b).map((sample) => readHarnessSample(store, address, sample, {}, found.get(sample))),
  );
  return samples.filter((s): s is HarnessSample => s !== null);
}

/** A rollout's record read for its trajectory, loosely: the viewer shows what it holds. */
const TrajectoryResultSchema = z.object({
  trajectory: z.custom<Trajectory>((v) => typeof v === 'object' && v !== null && Array.isArray((v as Trajectory).messages)),
});

/**
 * A harness group's state before it was assembled: `gatherHarness`'s (`harness/gathered`) once every rollout ended,
 * else each finished rollout's trajectory, and an empty one for each rollout still running. Undefined when the group
 * ran no harness.
 */
export async function readHarnessState(store: TrajectoryStore, address: GroupAddress): Promise<GroupState | undefined> {
  const { samples: found, gathered } = await listHarness(store, address);
  if (gathered) return loadGroupState(store, groupKey(address, 'harness', 'gathered'));
  if (found.size === 0) return undefined;
  const empty = (): Trajectory => ({
    messages: [],
    tokens: [],
    masks: [],
    logprobs: [],
    completionTokens: 0,
    finishReason: null,
    done: false,
  });
  const trajectories = await Promise.all(
    Array.from({ length: Math.max(...found.keys()) + 1 }, async (_, sample) => {
      const key = harnessKey(address, sample, 'result');
      const raw = await store.tryGet(key);
      return raw === undefined ? empty() : parseAt(TrajectoryResultSchema, raw, key).trajectory;
    }),
  );
  return { itemIndex: address.itemIndex, trajectories, groupOverrides: null, tools: null, stop: null };
}

/** The group with its harness rollouts' calls and outcomes beside its rollouts; as it was when it ran no harness. */
export async function withHarness(store: TrajectoryStore, address: GroupAddress, group: RawGroup): Promise<RawGroup> {
  const samples = await readHarnessSamples(store, address);
  if (samples.length === 0) return group;
  return { ...group, harness: group.scores.map((_, i) => samples.find((s) => s.sample === i) ?? null) };
}
