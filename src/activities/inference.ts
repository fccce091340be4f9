import { ApplicationFailure, Context } from '@temporalio/activity';
import { continuePrompt, type Continuation } from '../inference/continuation.js';
import { hermesAssistantMessage } from '../inference/tool-calls.js';
import { messageImages } from '../kits/images/images.js';
import type { Completion, InferenceClient } from '../inference/types.js';
import { toApplicationFailure } from '../inference/errors.js';
import { oldestWeightsVersion } from '../inference/weights-version.js';
import { continueTrainingSequence, TokenizationDriftError } from '../inference/openai-client.js';
import type { Sampling, StoreRef } from '../schema/rollout.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { activeSamples } from './environment.js';
import { liveness } from './environment-context.js';
import {
  cloneGroupState,
  groupKey,
  groupWeightsVersion,
  loadGroupState,
  saveGroupDelta,
  type GroupAddress,
  type GroupState,
  type Trajectory,
} from './group-state.js';
import { argumentsPreview, toolCallsOf, type TurnToolCalls } from './tool-calls.js';

export interface InferenceActivityDeps {
  /** The inference client of each environment this worker serves. */
  inference: (environment: string) => InferenceClient;
  /**
   * The token-in client of an environment, when it has one: every turn's prompt is then rendered
   * here and sent as token ids, so earlier turns are never re-tokenized (Atropos's ManagedServer).
   * Without it, the server renders the chat and each later prompt must start with the sequence so far.
   */
  continuation?: (environment: string) => Continuation | undefined;
  store: TrajectoryStore;
}

export interface GenerateTurnInput extends GroupAddress {
  turn: number;
  state: StoreRef;
  sampling: Sampling;
  maxTokenLength: number;
  /** Whether the environment takes further turns after this one (then a finished generation is not the end). */
  multiTurn: boolean;
}

export interface GenerateTurnResult {
  state: StoreRef;
  active: number[];
  /** Completion tokens of each trajectory so far. */
  completionTokens: number[];
  /** Completion tokens this turn generated (the worker's token metrics count these). */
  generatedTokens?: number;
  /**
   * The tool calls Clotho runs next, per active sample (only when the environment offers executable tools): names
   * and arguments for the history, cut short when long; the tool step reads the calls themselves from the state.
   */
  toolCalls?: TurnToolCalls[];
  /** The oldest weights version that generated any turn of the group so far, when the server reports versions. */
  weightsVersion?: number;
}

/** The chat-template switch of thinking models (Qwen3's `enable_thinking`), on when reasoning is asked for. */
export const THINKING = { enable_thinking: true } as const;

/**
 * A sample's completion as checkpointed: the prompt ids beyond the sequence so far rather than the whole prompt,
 * so that a long episode's checkpoints grow linearly with its turns.
 */
type Checkpoint = Omit<Completion, 'promptTokenIds'> & { promptTokenIds: null; promptSuffix: number[] | null };

/**
 * Activities that call inference servers (clotho-llm queue). Each sample's completion is checkpointed in
 * the store as soon as it arrives, so a retried turn only asks for what is still missing.
 */
export function createInferenceActivities(deps: InferenceActivityDeps) {
  return {
    async generateTurn(input: GenerateTurnInput): Promise<GenerateTurnResult> {
      const previous = await loadGroupState(deps.store, input.state);
      const state = cloneGroupState(previous);
      const generatedTokens = await generateInto(deps, input, state);
      const ref = await saveGroupDelta(deps.store, groupKey(input, `turn-${input.turn}`, 'generated'), input.state, previous, state);
      const weightsVersion = groupWeightsVersion(state);
      const result: GenerateTurnResult = {
        state: ref,
        active: activeSamples(state),
        completionTokens: state.trajectories.map((t) => t.completionTokens),
        generatedTokens,
        ...(weightsVersion === undefined ? {} : { weightsVersion }),
      };
      return state.executesTools ? { ...result, toolCalls: turnToolCalls(state, input.turn) } : result;
    },
  };
}

/**
 * Asks the model for the turn's completion of every active trajectory of `state` and appends it there (in memory;
 * the caller saves the state). Each completion is checkpointed in the store as soon as it arrives, and an attempt
 * that may follow an earlier one reads the checkpoints first, so a retried turn only asks for what is still missing.
 * With `oneRequestUnchecked`, a turn that is one request (one sample, or a first turn's samples together) keeps no
 * checkpoint and reads none: its caller writes the turn's state as soon as it returns, and that is the checkpoint.
 */
export async function generateInto(
  { inference, continuation, store }: InferenceActivityDeps,
  input: Omit<GenerateTurnInput, 'state'>,
  state: GroupState,
  { oneRequestUnchecked = false }: { oneRequestUnchecked?: boolean } = {},
): Promise<number> {
  const context = Context.current();
  const { signal, heartbeat } = liveness();
  const tokenIn = continuation?.(input.environment);
  // A messages-only group asks for messages alone, as chat, whatever tokenizer this worker knows.
  const messagesOnly = state.messagesOnly === true;
  // Chat requests carry the reasoning asked for; a prompt rendered here asks through the template's switch instead.
  const reasoning = input.sampling.reasoning;
  const checkpoint = (sample: number) => groupKey(input, `turn-${input.turn}`, `sample-${sample}`);
  // The completions of a fresh first turn, asked for in one request: one record, sample i at index i.
  const togetherKey = groupKey(input, `turn-${input.turn}`, 'samples');
  const call = async (trajectory: Trajectory, n: number): Promise<Completion[]> => {
    const sampling = {
      n,
      maxTokens: Math.max(1, input.maxTokenLength - trajectory.completionTokens),
      temperature: input.sampling.temperature,
      topP: input.sampling.topP,
      ...(state.stop ? { stop: state.stop } : {}),
    };
    const options = { signal, onProgress: () => heartbeat() };
    // Token ids cannot carry pixels: a conversation with images goes to the server as messages (vLLM renders the
    // image placeholders and returns the ids it used).
    if (messagesOnly || !tokenIn || messageImages(trajectory.messages).length > 0) {
      const request = {
        messages: trajectory.messages,
        ...sampling,
        ...(messagesOnly ? { messagesOnly } : {}),
        ...(state.tools ? { tools: state.tools } : {}),
        ...(reasoning ? { reasoning } : {}),
      };
      return asFailure(() => inference(input.environment).generate(request, options));
    }
    const promptTokenIds = nonRetryableDrift(`turn ${input.turn}`, () =>
      continuePrompt(tokenIn.tokenizer, trajectory, trajectory.messages, state.tools ?? undefined, reasoning ? THINKING : undefined),
    );
    const completions = await asFailure(() => tokenIn.client.generateTokens({ promptTokenIds, ...sampling }, options));
    return completions.map((c, j) => ({
      ...c,
      // The ids sent are the sequence: a server that echoes them altered must not rewrite it.
      promptTokenIds,
      message:
        tokenIn.toolParser === 'hermes'
          ? { role: 'assistant', ...hermesAssistantMessage(c.text, `call-${input.turn}-${j}`) }
          : { role: 'assistant', content: c.text },
    }));
  };

  const active = activeSamples(state);
  const completions = new Map<number, Completion>();
  // A fresh first turn shares one prompt: ask for all samples in one request (the server reuses the prefix). They
  // arrive together, so one record checkpoints them all. A messages-only episode of several turns asks for each
  // sample alone: the server's usage counts one request's choices together, and the budget is per trajectory.
  const together = (missing: number[]) =>
    input.turn === 0 && missing.length === state.trajectories.length && missing.length > 1 && !(messagesOnly && input.multiTurn);
  const unchecked = oneRequestUnchecked && (active.length === 1 || together(active));
  // Only an earlier attempt of this turn writes its checkpoints: the first attempt has none to read. A local
  // activity counts attempts afresh on the worker that takes its workflow task over after a crash, so it always reads.
  if (!unchecked && (context.info.attempt > 1 || context.info.isLocal)) {
    const probes = [...(input.turn === 0 ? [togetherKey] : []), ...active.map(checkpoint)];
    // Past one probe, one listing of the turn's records is cheaper than a failed read per checkpoint not taken
    // (a first local attempt has none): one request to S3 instead of a group's size.
    const written = probes.length > 1 ? await keysUnder(store, groupKey(input, `turn-${input.turn}`)) : null;
    const read = <T>(key: string) => (written && !written.has(key) ? undefined : store.tryGet<T>(key));
    const together = input.turn === 0 ? await read<Completion[]>(togetherKey) : undefined;
    together?.forEach((c, i) => completions.set(i, c));
    for (const i of active) {
      if (completions.has(i)) continue;
      const saved = await read<Checkpoint | Completion>(checkpoint(i));
      if (saved) completions.set(i, fromCheckpoint(saved, state.trajectories[i]!));
    }
  }
  const save = async (i: number, completion: Completion) => {
    if (!unchecked) await store.put(checkpoint(i), toCheckpoint(completion, state.trajectories[i]!));
    completions.set(i, completion);
  };
  const missing = active.filter((i) => !completions.has(i));
  if (together(missing)) {
    const results = await call(state.trajectories[0]!, missing.length);
    if (!unchecked) await store.put(togetherKey, results);
    results.forEach((c, i) => completions.set(i, c));
  } else {
    await Promise.all(
      missing.map(async (i) => {
        const [completion] = await call(state.trajectories[i]!, 1);
        await save(i, completion!);
      }),
    );
  }

  const apply = messagesOnly ? applyMessage : applyCompletion;
  const before = state.trajectories.reduce((n, t) => n + t.completionTokens, 0);
  for (const i of active)
    nonRetryableDrift(`turn ${input.turn}, sample ${i}`, () => apply(state.trajectories[i]!, completions.get(i)!, input));
  return state.trajectories.reduce((n, t) => n + t.completionTokens, 0) - before;
}

/**
 * The tool calls Clotho runs next, per active sample (for a state whose environment offers executable tools): names
 * and arguments for the history, cut short when long.
 */
function turnToolCalls(state: GroupState, turn: number): TurnToolCalls[] {
  return activeSamples(state).flatMap((sample) => {
    const { calls } = toolCallsOf(state.trajectories[sample]!, turn, sample);
    const shown = calls.map((c) => ({ name: c.name, arguments: argumentsPreview(c.arguments) }));
    return shown.length > 0 ? [{ sample, calls: shown }] : [];
  });
}

export type InferenceActivities = ReturnType<typeof createInferenceActivities>;

/** The keys of the records under `prefix`. */
async function keysUnder(store: TrajectoryStore, prefix: string): Promise<Set<string>> {
  const keys = new Set<string>();
  for await (const entry of store.list(prefix)) keys.add(entry.key);
  return keys;
}

async function asFailure<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toApplicationFailure(error);
  }
}

/** A template that rewrites history does so on every attempt: retrying cannot help. The error names the turn. */
function nonRetryableDrift<T>(where: string, body: () => T): T {
  try {
    return body();
  } catch (error) {
    if (error instanceof TokenizationDriftError) throw ApplicationFailure.nonRetryable(`${where}: ${error.message}`, 'TokenizationDrift');
    throw error;
  }
}

function toCheckpoint(completion: Completion, trajectory: Trajectory): Checkpoint | Completion {
  if (!completion.promptTokenIds || trajectory.tokens.length === 0) return completion;
  return { ...completion, promptTokenIds: null, promptSuffix: completion.promptTokenIds.slice(trajectory.tokens.length) };
}

function fromCheckpoint(saved: Checkpoint | Completion, trajectory: Trajectory): Completion {
  if (!('promptSuffix' in saved) || !saved.promptSuffix) return saved;
  const { promptSuffix, ...completion } = saved;
  return { ...completion, promptTokenIds: [...trajectory.tokens, ...promptSuffix] };
}

function applyCompletion(trajectory: Trajectory, completion: Completion, input: Omit<GenerateTurnInput, 'state'>): void {
  if (!completion.tokenIds || !completion.logprobs || !completion.promptTokenIds) {
    throw ApplicationFailure.nonRetryable(
      'the inference server returned no token ids or logprobs, so the rollout cannot be trained on; ' +
        'use a server that returns them (--openai.server_type vllm, sglang, or the embedded engine); ' +
        'for evaluation or SFT data, clotho process --env.messages_only needs none',
      'MissingTokenIds',
    );
  }
  // The trajectory is this activity's own copy (cloneGroupState): its arrays grow in place.
  continueTrainingSequence(
    { tokens: trajectory.tokens, masks: trajectory.masks, inferenceLogprobs: trajectory.logprobs },
    completion.promptTokenIds,
    { tokenIds: completion.tokenIds, logprobs: completion.logprobs },
  );
  appendTurn(trajectory, completion, completion.tokenIds.length, input);
}

/**
 * Appends a messages-only completion: its message, and the tokens the server says it generated (usage), which count
 * against the budget as generated ids do. A completion without that count leaves the trajectory `uncounted`.
 */
function applyMessage(trajectory: Trajectory, completion: Completion, input: Omit<GenerateTurnInput, 'state'>): void {
  if (completion.completionTokens === undefined) trajectory.uncounted = true;
  appendTurn(trajectory, completion, completion.completionTokens ?? 0, input);
}

/**
 * Appends a completion's message and its generated tokens (and the weights version that made them, keeping the oldest),
 * and ends the trajectory when its budget or turn is over.
 */
function appendTurn(trajectory: Trajectory, completion: Completion, generated: number, input: Omit<GenerateTurnInput, 'state'>): void {
  trajectory.messages.push({ ...completion.message, role: 'assistant', content: completion.message.content ?? completion.text });
  trajectory.completionTokens += generated;
  const weightsVersion = oldestWeightsVersion([trajectory.weightsVersion, completion.weightsVersion]);
  if (weightsVersion !== undefined) trajectory.weightsVersion = weightsVersion;
  trajectory.finishReason = completion.finishReason;
  const outOfBudget = completion.finishReason === 'length' || trajectory.completionTokens >= input.maxTokenLength;
  trajectory.done = outOfBudget || !input.multiTurn;
  // A multi-turn episode whose context budget ran out ends as truncated, never as an error (Atropos's convention).
  if (outOfBudget && input.multiTurn) trajectory.truncated = true;
}
