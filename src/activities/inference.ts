import { ApplicationFailure, Context } from '@temporalio/activity';
import { continuePrompt, parseHermesToolCalls, type Continuation } from '../inference/continuation.js';
import type { Completion, InferenceClient } from '../inference/types.js';
import { toApplicationFailure } from '../inference/errors.js';
import { buildTrainingSequence, extendTrainingSequence, TokenizationDriftError } from '../inference/openai-client.js';
import type { Sampling, StoreRef } from '../schema/rollout.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { activeSamples } from './environment.js';
import { groupKey, type GroupAddress, type GroupState, type Trajectory } from './group-state.js';

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
  completionTokens: number[];
}

/**
 * Activities that call inference servers (clotho-llm queue). Each sample's completion is checkpointed in
 * the store as soon as it arrives, so a retried turn only asks for what is still missing.
 */
export function createInferenceActivities({ inference, continuation, store }: InferenceActivityDeps) {
  return {
    async generateTurn(input: GenerateTurnInput): Promise<GenerateTurnResult> {
      const context = Context.current();
      const state = await store.get<GroupState>(input.state);
      const tokenIn = continuation?.(input.environment);
      const checkpoint = (sample: number) => groupKey(input, `turn-${input.turn}`, `sample-${sample}`);
      const call = async (trajectory: Trajectory, n: number): Promise<Completion[]> => {
        const sampling = {
          n,
          maxTokens: Math.max(1, input.maxTokenLength - trajectory.completionTokens),
          temperature: input.sampling.temperature,
          topP: input.sampling.topP,
          ...(state.stop ? { stop: state.stop } : {}),
        };
        const options = { signal: context.cancellationSignal, onProgress: () => context.heartbeat() };
        if (!tokenIn) {
          const request = { messages: trajectory.messages, ...sampling, ...(state.tools ? { tools: state.tools } : {}) };
          return asFailure(() => inference(input.environment).generate(request, options));
        }
        const promptTokenIds = nonRetryableDrift(() =>
          continuePrompt(tokenIn.tokenizer, trajectory, trajectory.messages, state.tools ?? undefined));
        const completions = await asFailure(() => tokenIn.client.generateTokens({ promptTokenIds, ...sampling }, options));
        return completions.map((c, j) => ({
          ...c,
          // The ids sent are the sequence: a server that echoes them altered must not rewrite it.
          promptTokenIds,
          message: tokenIn.toolParser === 'hermes'
            ? { role: 'assistant', ...parseHermesToolCalls(c.text, `call-${input.turn}-${j}`) }
            : { role: 'assistant', content: c.text },
        }));
      };

      const active = activeSamples(state);
      const completions = new Map<number, Completion>();
      for (const i of active) {
        const saved = await store.tryGet<Completion>(checkpoint(i));
        if (saved) completions.set(i, saved);
      }
      const missing = active.filter((i) => !completions.has(i));
      // A fresh first turn shares one prompt: ask for all samples in one request (the server reuses the prefix).
      const fresh = input.turn === 0 && missing.length === state.trajectories.length && missing.length > 1;
      if (fresh) {
        const results = await call(state.trajectories[0]!, missing.length);
        await Promise.all(results.map((c, j) => store.put(checkpoint(missing[j]!), c).then(() => completions.set(missing[j]!, c))));
      } else {
        await Promise.all(
          missing.map(async (i) => {
            const [completion] = await call(state.trajectories[i]!, 1);
            await store.put(checkpoint(i), completion);
            completions.set(i, completion!);
          }),
        );
      }

      for (const i of active) nonRetryableDrift(() => applyCompletion(state.trajectories[i]!, completions.get(i)!, input));
      const ref = await store.put(groupKey(input, `turn-${input.turn}`, 'generated'), state);
      return { state: ref, active: activeSamples(state), completionTokens: state.trajectories.map((t) => t.completionTokens) };
    },
  };
}

export type InferenceActivities = ReturnType<typeof createInferenceActivities>;

async function asFailure<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toApplicationFailure(error);
  }
}

/** A template that rewrites history does so on every attempt: retrying cannot help. */
function nonRetryableDrift<T>(body: () => T): T {
  try {
    return body();
  } catch (error) {
    if (error instanceof TokenizationDriftError) throw ApplicationFailure.nonRetryable(error.message, 'TokenizationDrift');
    throw error;
  }
}

function applyCompletion(trajectory: Trajectory, completion: Completion, input: GenerateTurnInput): void {
  if (!completion.tokenIds || !completion.logprobs || !completion.promptTokenIds) {
    throw ApplicationFailure.nonRetryable(
      'the inference server returned no token ids or logprobs, so the rollout cannot be trained on; ' +
        'use a server that returns them (--openai.server_type vllm, sglang, or the embedded engine)',
      'MissingTokenIds',
    );
  }
  const sequence =
    trajectory.tokens.length === 0
      ? buildTrainingSequence(completion.promptTokenIds, { tokenIds: completion.tokenIds, logprobs: completion.logprobs })
      : extendTrainingSequence(
          { tokens: trajectory.tokens, masks: trajectory.masks, inferenceLogprobs: trajectory.logprobs },
          completion.promptTokenIds,
          { tokenIds: completion.tokenIds, logprobs: completion.logprobs },
        );
  trajectory.tokens = sequence.tokens;
  trajectory.masks = sequence.masks;
  trajectory.logprobs = sequence.inferenceLogprobs;
  trajectory.messages.push({ ...completion.message, role: 'assistant', content: completion.message.content ?? completion.text });
  trajectory.completionTokens += completion.tokenIds.length;
  trajectory.finishReason = completion.finishReason;
  const outOfBudget = completion.finishReason === 'length' || trajectory.completionTokens >= input.maxTokenLength;
  trajectory.done = outOfBudget || !input.multiTurn;
}
