import { ApplicationFailure } from '@temporalio/activity';
import { mkdir, open, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { StoreRef } from '../schema/rollout.js';
import { groupImages } from '../kits/images/images.js';
import { jsonlLine } from '../schema/float-json.js';
import { parseHotFirst } from '../schema/number-rows.js';
import {
  HotScoredDataGroupSchema,
  MASKED,
  MessagesOnlyGroupSchema,
  ScoredDataGroupSchema,
  type MessagesOnlyGroup,
  type WrittenGroup,
} from '../schema/scored-data.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { groupKey, loadGroupState, type GroupAddress, type GroupState, type Trajectory } from './group-state.js';
import type { TeacherOutput } from './teacher.js';

export interface AssembleInput extends GroupAddress {
  state: StoreRef;
  scores: number[];
  teacher: StoreRef | null;
  generationParams: Record<string, unknown>;
  /** Per-turn advantages (`[sample][turn]`) from the environment, spread over each turn's tokens. */
  advantages?: StoreRef | null;
}

export interface AssembleResult {
  group: StoreRef;
  /** Tokens over all sequences of the group (a messages-only group: the completion tokens the server counted). */
  tokens: number;
  longestSequence: number;
}

export interface DeliverToJsonlInput {
  path: string;
  /** Line number (0-based) the first group goes to; makes a retried delivery a no-op. */
  firstLine: number;
  groups: StoreRef[];
}

/** Activities that turn trajectories into Atropos groups and hand them on (clotho-env queue). */
export function createTrajectoryActivities({ store }: { store: TrajectoryStore }) {
  return {
    /** Builds the ScoredDataGroup (Atropos's exact fields) and writes it to the store. */
    async assembleGroup(input: AssembleInput): Promise<AssembleResult> {
      const state = await loadGroupState(store, input.state);
      const teacher = input.teacher ? await store.get<TeacherOutput>(input.teacher) : null;
      const perTurn = input.advantages ? await store.get<number[][]>(input.advantages) : null;
      return assembleScoredGroup(store, input, state, { scores: input.scores, teacher, perTurn, generationParams: input.generationParams });
    },

    /**
     * Appends groups to a JSONL file so that each lands exactly once: the workflow numbers the lines, and a
     * retry finds the lines an earlier attempt already wrote (a torn last line is cut off first). A file with fewer
     * lines than the run delivered, or more than this delivery makes, was changed by someone else: see
     * {@link SINK_CORRUPTED}.
     */
    async deliverToJsonl(input: DeliverToJsonlInput): Promise<number> {
      await mkdir(dirname(input.path), { recursive: true });
      const lines = await completeLines(input.path);
      const line = async (ref: StoreRef) => `${jsonlLine(await store.get(ref))}\n`;
      // Lines past firstLine are this delivery's, written by an attempt that died: each must be the group it wrote.
      const written = input.groups.slice(0, Math.max(0, lines - input.firstLine));
      const mine =
        lines <= input.firstLine + input.groups.length && (await endsWith(input.path, (await Promise.all(written.map(line))).join('')));
      if (lines < input.firstLine || !mine) {
        throw ApplicationFailure.create({
          type: SINK_CORRUPTED,
          message:
            `${input.path} has ${lines} lines, but the run had delivered ${input.firstLine} groups to it: the file was changed or ` +
            'deleted during the run. Run the run’s command again with --rebuild-output to write its groups again from the ' +
            'trajectory store; until then this delivery is retried every minute',
          nextRetryDelay: SINK_RETRY_DELAY,
        });
      }
      const pending = input.groups.slice(lines - input.firstLine);
      if (pending.length === 0) return 0;
      const text = (await Promise.all(pending.map(line))).join('');
      const file = await open(input.path, 'a');
      try {
        await file.write(text);
        await file.sync();
      } finally {
        await file.close();
      }
      knownLines.set(input.path, { size: (await stat(input.path)).size, lines: lines + pending.length });
      return pending.length;
    },
  };
}

export type TrajectoryActivities = ReturnType<typeof createTrajectoryActivities>;

/**
 * The failure type of a delivery to a JSONL file that was changed or deleted under the run. Retryable, and only
 * every {@link SINK_RETRY_DELAY}, so that the run waits (within the deliver step's attempts) rather than failing for
 * good: the command that sees it stops and names the way on, and the command resumed with `--rebuild-output` writes the
 * file again from the store (src/cli/jsonl-output.ts) before its workers poll.
 */
export const SINK_CORRUPTED = 'SinkCorrupted';
const SINK_RETRY_DELAY = '60s';

/** What a group is assembled from besides its trajectories. */
export interface AssembleParts {
  scores: number[];
  teacher: TeacherOutput | null;
  /** Per-turn advantages (`[sample][turn]`), or null when the environment computes none. */
  perTurn: number[][] | null;
  generationParams: Record<string, unknown>;
}

/** Builds a group's ScoredDataGroup (Atropos's exact fields) from its loaded state and writes it to the store. */
export async function assembleScoredGroup(
  store: TrajectoryStore,
  address: GroupAddress,
  state: GroupState,
  parts: AssembleParts,
): Promise<AssembleResult> {
  const { teacher, perTurn } = parts;
  // An episode cut off by its token budget, or still going at the turn limit (single-turn ones are always done),
  // gets Atropos's `set_advantage_to_zero`: the trainer learns nothing from an unfinished episode.
  const truncated = state.trajectories.map((t) => t.truncated === true || !t.done);
  const overrides = truncated.some(Boolean) ? truncated.map((cut) => (cut ? { set_advantage_to_zero: true } : {})) : null;
  if (state.messagesOnly) return assembleMessagesOnly(store, address, state, parts, overrides);
  const parsed = parseHotFirst(HotScoredDataGroupSchema, ScoredDataGroupSchema, {
    tokens: state.trajectories.map((t) => t.tokens),
    masks: state.trajectories.map((t) => t.masks),
    scores: parts.scores,
    messages: state.trajectories.map((t) => t.messages),
    generation_params: parts.generationParams,
    group_overrides: state.groupOverrides,
    inference_logprobs: state.trajectories.map((t) => t.logprobs),
    advantages: perTurn ? state.trajectories.map((t, i) => tokenAdvantages(t, perTurn[i] ?? [])) : null,
    overrides,
    distill_token_ids: teacher?.distill_token_ids ?? null,
    distill_logprobs: teacher?.distill_logprobs ?? null,
    // Atropos's multimodal environments: each sequence's image(s) as base64, null for text-only groups.
    images: groupImages(state.trajectories.map((t) => t.messages)),
  });
  if (!parsed.success) throw parsed.error;
  // The tools offered go with the group, so that its messages re-render as the prompt the model saw.
  const group: WrittenGroup = { ...parsed.data, ...(state.tools ? { tools: state.tools } : {}) };
  const ref = await store.put(groupKey(address, 'group'), group);
  const lengths = group.tokens.map((t) => t.length);
  return { group: ref, tokens: lengths.reduce((a, b) => a + b, 0), longestSequence: Math.max(0, ...lengths) };
}

/**
 * A messages-only group's record: no tokens to assemble, so no advantages spread over them or teacher logprobs (the
 * per-turn rewards are on the messages); the tokens it reports are those the server counted.
 */
async function assembleMessagesOnly(
  store: TrajectoryStore,
  address: GroupAddress,
  state: GroupState,
  parts: AssembleParts,
  overrides: Record<string, unknown>[] | null,
): Promise<AssembleResult> {
  const counted = state.trajectories.every((t) => !t.uncounted);
  const group = MessagesOnlyGroupSchema.parse({
    messages_only: true,
    scores: parts.scores,
    messages: state.trajectories.map((t) => t.messages),
    completion_tokens: counted ? state.trajectories.map((t) => t.completionTokens) : null,
    overrides,
    group_overrides: state.groupOverrides,
    generation_params: parts.generationParams,
    ...(state.tools ? { tools: state.tools } : {}),
  } satisfies MessagesOnlyGroup);
  const ref = await store.put(groupKey(address, 'group'), group);
  const lengths = state.trajectories.map((t) => t.completionTokens);
  return { group: ref, tokens: lengths.reduce((a, b) => a + b, 0), longestSequence: Math.max(0, ...lengths) };
}

/**
 * Spreads per-turn advantages over a trajectory's tokens: each run of generated (unmasked) positions is one assistant
 * turn and takes that turn's value; prompt and tool positions take 0. A turn without a value takes the last one.
 */
export function tokenAdvantages(trajectory: Trajectory, perTurn: number[]): number[] {
  let turn = -1;
  return trajectory.masks.map((mask, i) => {
    if (mask === MASKED) return 0;
    if (i === 0 || trajectory.masks[i - 1] === MASKED) turn++;
    return perTurn[Math.min(turn, perTurn.length - 1)] ?? 0;
  });
}

/** Whether the file's last bytes are `text` (always, for no text). */
async function endsWith(path: string, text: string): Promise<boolean> {
  const expected = Buffer.from(text);
  if (expected.length === 0) return true;
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    if (size < expected.length) return false;
    const tail = Buffer.alloc(expected.length);
    await file.read(tail, 0, expected.length, size - expected.length);
    return tail.equals(expected);
  } finally {
    await file.close();
  }
}

/** Line counts of files this process wrote, valid while the file size is unchanged. */
const knownLines = new Map<string, { size: number; lines: number }>();

/** Counts complete lines, truncating a torn last line left by a crash mid-write. */
export async function completeLines(path: string): Promise<number> {
  let file;
  try {
    file = await open(path, 'r+');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  try {
    const { size } = await file.stat();
    const known = knownLines.get(path);
    if (known && known.size === size) return known.lines;
    let lines = 0;
    let lastNewline = -1;
    const chunk = Buffer.alloc(1 << 20);
    for (let offset = 0; offset < size;) {
      const { bytesRead } = await file.read(chunk, 0, chunk.length, offset);
      for (let i = 0; i < bytesRead; i++) {
        if (chunk[i] === 0x0a) {
          lines++;
          lastNewline = offset + i;
        }
      }
      offset += bytesRead;
    }
    if (lastNewline + 1 < size) await file.truncate(lastNewline + 1);
    knownLines.set(path, { size: lastNewline + 1, lines });
    return lines;
  } finally {
    await file.close();
  }
}
