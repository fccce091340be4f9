import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Continuation } from '../inference/continuation.js';
import { chatCompletionEvents, includesUsage } from '../inference/chat-stream.js';
import { InferenceError } from '../inference/errors.js';
import { ManagedSession, type AnsweredTurn, type SequenceNode, type SessionRequest } from '../inference/managed-session.js';
import type { Completion, InferenceClient } from '../inference/types.js';
import { canonicalJson } from '../schema/canonical-json.js';
import { ChatRequestSchema, type ChatRequest } from '../schema/openai-chat.js';
import type { Message } from '../schema/scored-data.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import type { HarnessEnd } from '../env/harness.js';
import { oldestWeightsVersion } from '../inference/weights-version.js';
import type { Trajectory } from './group-state.js';

/**
 * One harness rollout's model session (issue 27): the OpenAI chat API an agent program talks to, every call recorded
 * in the store before its answer reaches the agent, with exact tokens (Atropos's ManagedServer bookkeeping,
 * {@link ManagedSession}).
 *
 * Durable by replay: a retried attempt (the agent's process or its worker died) starts the agent again in a fresh
 * workspace, and each request that equals the recorded one at the same position, the record before it replayed too,
 * is answered from the record without asking the model. The first request that differs, or that has no record, is
 * sent to the model, and so is every one after it; a difference is kept with its reason.
 */

/** A recorded completion: what the model generated for a call. */
const RecordedCompletionSchema = z.object({
  text: z.string(),
  tokenIds: z.array(z.number().int()),
  logprobs: z.array(z.number()),
  finishReason: z.string().nullable(),
  weightsVersion: z.number().int().optional(),
});

/** One model call as the store keeps it (`…/harness/sample-<s>/call-<k>`). */
export const CallRecordSchema = z.object({
  call: z.number().int().nonnegative(),
  /** sha256 of the request in canonical JSON (messages, tools and the sampling the agent asked for). */
  request: z.string(),
  /** sha256 of each message, so that a request that differs says where. */
  messages: z.array(z.string()),
  /** sha256 of the request without its messages. */
  params: z.string(),
  /** The digest of the call before it (its request and answer): a call replays only after the one before it did. */
  prev: z.string().nullable(),
  /** The last message sent, cut short: what `clotho inspect` shows of the request. */
  summary: z.string(),
  promptTokens: z.number().int(),
  completion: RecordedCompletionSchema,
  /** The chat-completion response the agent got, as it got it. */
  response: z.record(z.string(), z.unknown()),
  /** Milliseconds the model took. */
  modelMs: z.number(),
});
export type CallRecord = z.infer<typeof CallRecordSchema>;

/** A call as the session reports it to its heartbeat and to `clotho inspect`. */
export interface CallEvent {
  call: number;
  replayed: boolean;
  summary: string;
  promptTokens: number;
  completionTokens: number;
}

export interface HarnessSessionOptions {
  store: TrajectoryStore;
  /** The store key of call k. */
  callKey(call: number): string;
  /**
   * Token-in generation: every prompt rendered here with the policy's chat template, exact tokens kept. Absent: the
   * session asks `messagesOnly` for messages alone (OpenAI's API and hosted ones), and keeps no tokens.
   */
  continuation?: Continuation;
  /** The chat server of a messages-only session (no `continuation`). */
  messagesOnly?: InferenceClient;
  /** The model name answers carry. */
  model: string;
  /**
   * The run's sampling: an agent's own temperature is not the policy's to train on. Absent: the request's own (a
   * verifiers environment imposes the run's sampling on every request before it reaches the session).
   */
  sampling?: { temperature: number; topP: number };
  /** Model calls the episode may make; the one after is refused and the episode ends (`calls`). */
  maxCalls: number;
  /** Tokens the model may generate over the episode; the call after the budget is spent is refused (`tokens`). */
  maxTokens: number;
  signal: AbortSignal;
  /** Called while the model works and after each call. */
  onProgress(event?: CallEvent): void;
  /** The episode's budget is spent: the runner stops the agent. */
  onBudgetSpent(end: Extract<HarnessEnd, 'calls' | 'tokens'>): void;
  /** A model server failed: the attempt must fail (and be retried), never turn into the agent's error or a reward. */
  onInfrastructureFailure(error: Error): void;
}

/** An HTTP answer to the agent: JSON, or for a request that asked to stream, the same completion as server-sent events. */
export interface SessionAnswer {
  status: number;
  body: unknown;
  /** The body's chunks (`data: …` lines), when the request asked for `stream: true`. */
  events?: string[];
}

const errorText = (reason: unknown) => (reason instanceof Error ? reason.message : String(reason));
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const SUMMARY_CHARS = 160;

const openAIError = (status: number, message: string, type = 'invalid_request_error'): SessionAnswer => ({
  status,
  body: { error: { message, type, code: status } },
});

/** What differs between a request and the recorded one, in words. */
function divergence(record: CallRecord, messages: string[], params: string, prev: string | null): string {
  if (record.prev !== prev) return 'the call before it was not replayed';
  const at = messages.findIndex((m, i) => record.messages[i] !== m);
  if (at >= 0) return `message ${at} differs (${messages.length} messages, ${record.messages.length} recorded)`;
  if (messages.length !== record.messages.length) return `${messages.length} messages, ${record.messages.length} recorded`;
  if (params !== record.params) return 'sampling, tools or other request fields differ';
  return 'request differs';
}

/** What one live call generated: the completion, the message answered with, and the prompt's tokens. */
interface Generated {
  completion: Completion;
  answer: AnsweredTurn;
  promptTokens: number;
}

export class HarnessSession {
  /** The sequences' token bookkeeping; null in a messages-only session. */
  readonly state: ManagedSession | null;
  /** Calls answered, replayed or live. */
  calls = 0;
  replayed = 0;
  /** Where this attempt parted from the record, and why; after it, every call is live. */
  readonly diverged: { call: number; reason: string }[] = [];
  completionTokens = 0;
  weightsVersions: number[] = [];
  /** The conversation of the last call, its answer appended: the trajectory's messages. */
  messages: Message[] = [];
  /** The sequence the last call grew. */
  lastNode: SequenceNode | null = null;
  private replaying = true;
  private prev: string | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private ended = false;

  constructor(private readonly options: HarnessSessionOptions) {
    if (!options.continuation && !options.messagesOnly) throw new Error('a session needs a continuation or a messages-only client');
    this.state = options.continuation ? new ManagedSession(options.continuation.tokenizer, false) : null;
  }

  /** Answers one chat-completion request body; requests run one at a time, in the order they came. */
  chat(body: unknown): Promise<SessionAnswer> {
    const run = this.queue.then(() => this.answer(body));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async answer(body: unknown): Promise<SessionAnswer> {
    const parsed = ChatRequestSchema.safeParse(body);
    if (!parsed.success) return openAIError(422, z.prettifyError(parsed.error));
    const request = parsed.data;
    if (request.messages.length === 0) return openAIError(400, 'messages must not be empty');
    if ((request.n ?? 1) !== 1) return openAIError(400, 'n must be 1: a harness rollout is one trajectory');
    const { maxCalls, maxTokens } = this.options;
    if (this.ended) return openAIError(400, "the episode's budget is spent");
    if (this.calls >= maxCalls || this.completionTokens >= maxTokens) {
      this.ended = true;
      this.options.onBudgetSpent(this.calls >= maxCalls ? 'calls' : 'tokens');
      return openAIError(400, `the episode's budget is spent (${maxCalls} model calls, ${maxTokens} generated tokens)`);
    }
    const call = this.calls;
    const messageDigests = request.messages.map((m) => sha256(canonicalJson(m)));
    const { messages: _, ...rest } = request;
    const params = sha256(canonicalJson(rest));
    const digest = sha256(canonicalJson({ messages: messageDigests, params }));
    const sessionRequest = {
      messages: request.messages,
      ...(request.tools?.length ? { tools: request.tools } : {}),
      parseTools: Boolean(request.tools?.length) && request.tool_choice !== 'none',
    };

    const recorded = this.replaying ? await this.recordOf(call) : undefined;
    if (recorded && recorded.request === digest && recorded.prev === this.prev) {
      const answer = this.state
        ? this.state.record(
            this.state.prompt(sessionRequest),
            [asCompletion(recorded.completion)],
            sessionRequest.parseTools,
            idPrefix(recorded),
          )[0]!
        : answerOf(recorded.response);
      this.replayed++;
      this.finishCall(recorded, request, answer, true);
      return answered(request, recorded.response);
    }
    if (recorded) this.diverged.push({ call, reason: divergence(recorded, messageDigests, params, this.prev) });
    this.replaying = false;

    const id = `chatcmpl-${digest.slice(0, 24)}`;
    const started = Date.now();
    let generated: Generated;
    try {
      generated = await this.generate(request, sessionRequest, `call-${id.slice(9)}`);
    } catch (error) {
      if (error instanceof InferenceError && error.kind === 'request') {
        return openAIError(400, `the model refused the request: ${error.message}`);
      }
      this.options.onInfrastructureFailure(error as Error);
      return openAIError(503, `the model server failed: ${(error as Error).message}`, 'server_error');
    }
    // An attempt Temporal gave up on leaves the records to the one that replaced it (issue 38, finding 1).
    const { signal } = this.options;
    if (signal.aborted) return openAIError(503, `this attempt was cancelled: ${errorText(signal.reason)}`, 'server_error');
    const { completion, answer, promptTokens } = generated;
    const tokenIds = completion.tokenIds ?? [];
    // A messages-only answer has no token ids: its usage is what the server counted.
    const completionTokens = this.state ? tokenIds.length : (completion.completionTokens ?? 0);
    const record: CallRecord = {
      call,
      request: digest,
      messages: messageDigests,
      params,
      prev: this.prev,
      summary: summaryOf(request.messages.at(-1)!),
      promptTokens,
      completion: {
        text: completion.text,
        tokenIds,
        logprobs: completion.logprobs ?? [],
        finishReason: completion.finishReason,
        ...(completion.weightsVersion === undefined ? {} : { weightsVersion: completion.weightsVersion }),
      },
      response: {
        id,
        object: 'chat.completion',
        created: Math.floor(started / 1000),
        model: this.options.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: answer.content, ...(answer.tool_calls ? { tool_calls: answer.tool_calls } : {}) },
            finish_reason: answer.tool_calls ? 'tool_calls' : (completion.finishReason ?? 'stop'),
          },
        ],
        usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
      },
      modelMs: Date.now() - started,
    };
    // Durable before the agent sees it: a crash after this point replays the answer instead of asking again.
    await this.options.store.put(this.options.callKey(call), record);
    this.finishCall(record, request, answer, false);
    return answered(request, record.response);
  }

  /** One live generation: token ids of the prompt rendered here, or, messages only, the conversation as it is. */
  private async generate(request: ChatRequest, sessionRequest: SessionRequest, idPrefix: string): Promise<Generated> {
    const { maxTokens, signal } = this.options;
    const stop = typeof request.stop === 'string' ? [request.stop] : request.stop;
    const sampling = {
      n: 1,
      maxTokens: Math.min(request.max_tokens ?? request.max_completion_tokens ?? maxTokens, maxTokens - this.completionTokens),
      temperature: this.options.sampling?.temperature ?? request.temperature ?? 1,
      topP: this.options.sampling?.topP ?? request.top_p ?? 1,
      ...(stop?.length ? { stop } : {}),
      ...(typeof request.seed === 'number' ? { seed: request.seed } : {}),
    };
    const call = { signal, onProgress: () => this.options.onProgress() };
    if (this.state) {
      const prompt = this.state.prompt(sessionRequest);
      const [completion] = (await this.options.continuation!.client.generateTokens({ promptTokenIds: prompt.ids, ...sampling }, call)) as [
        Completion,
      ];
      const answer = this.state.record(prompt, [completion], sessionRequest.parseTools, idPrefix)[0]!;
      return { completion, answer, promptTokens: prompt.ids.length };
    }
    const [completion] = (await this.options.messagesOnly!.generate(
      { messages: request.messages, ...(sessionRequest.tools ? { tools: sessionRequest.tools } : {}), ...sampling, messagesOnly: true },
      call,
    )) as [Completion];
    const message = completion.message as { content?: unknown; tool_calls?: AnsweredTurn['tool_calls'] };
    const answer = {
      content: typeof message.content === 'string' ? message.content : completion.text,
      ...(message.tool_calls?.length ? { tool_calls: message.tool_calls } : {}),
    };
    return { completion, answer, promptTokens: 0 };
  }

  private async recordOf(call: number): Promise<CallRecord | undefined> {
    const raw = await this.options.store.tryGet(this.options.callKey(call));
    return raw === undefined ? undefined : CallRecordSchema.parse(raw);
  }

  private finishCall(record: CallRecord, request: ChatRequest, answer: AnsweredTurn, replayed: boolean): void {
    this.calls++;
    // Messages only, what the server counted (no token ids are kept).
    const usage = record.response.usage as { completion_tokens?: number } | undefined;
    this.completionTokens += this.state ? record.completion.tokenIds.length : (usage?.completion_tokens ?? 0);
    if (record.completion.weightsVersion !== undefined) this.weightsVersions.push(record.completion.weightsVersion);
    this.prev = sha256(`${record.request}:${canonicalJson(record.response.choices)}`);
    this.messages = [
      ...request.messages,
      { role: 'assistant', content: answer.content, ...(answer.tool_calls ? { tool_calls: answer.tool_calls } : {}) },
    ];
    this.lastNode = this.state?.nodes.find((node) => node.turns.at(-1) === answer) ?? null;
    this.options.onProgress({
      call: record.call,
      replayed,
      summary: record.summary,
      promptTokens: record.promptTokens,
      completionTokens: record.completion.tokenIds.length,
    });
  }
}

/**
 * A completion as the agent asked for it: JSON, or with `stream: true` (agents built on the AI SDK, opencode, always
 * ask so) the same completion as OpenAI's chunks (`chatCompletionEvents`): the record is the completion, and a replay
 * streams it the same way.
 */
function answered(request: ChatRequest, response: CallRecord['response']): SessionAnswer {
  if (!request.stream) return { status: 200, body: response };
  const events = chatCompletionEvents(response as Parameters<typeof chatCompletionEvents>[0], includesUsage(request));
  return { status: 200, body: response, events };
}

/** The message a recorded response answered with (a messages-only session replays it as it was). */
function answerOf(response: CallRecord['response']): AnsweredTurn {
  const [choice] = (response as { choices: { message: { content?: unknown; tool_calls?: AnsweredTurn['tool_calls'] } }[] }).choices;
  const content = typeof choice?.message.content === 'string' ? choice.message.content : '';
  return { content, ...(choice?.message.tool_calls?.length ? { tool_calls: choice.message.tool_calls } : {}) };
}

/** The id prefix of a recorded answer's tool calls, as the live call made them. */
const idPrefix = (record: CallRecord) => `call-${String(record.response.id).slice(9)}`;

function asCompletion(recorded: CallRecord['completion']): Completion {
  return {
    text: recorded.text,
    message: { role: 'assistant', content: recorded.text },
    finishReason: recorded.finishReason,
    promptTokenIds: null,
    tokenIds: recorded.tokenIds,
    logprobs: recorded.logprobs,
  };
}

function summaryOf(message: Message): string {
  const text = typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? '');
  const flat = text.replace(/\s+/g, ' ').trim();
  return `${message.role}: ${flat.length > SUMMARY_CHARS ? `${flat.slice(0, SUMMARY_CHARS)}…` : flat}`;
}

/** The trajectory a session's calls made: the last call's conversation with its answer, the sequence that call grew. */
export function sessionTrajectory(session: HarnessSession, end: { truncated: boolean; state?: unknown }): Trajectory {
  const node = session.lastNode;
  const weightsVersion = oldestWeightsVersion(session.weightsVersions);
  return {
    messages: session.messages,
    tokens: node?.tokens ?? [],
    masks: node?.masks ?? [],
    logprobs: node?.logprobs ?? [],
    completionTokens: session.completionTokens,
    finishReason: node?.finishReason ?? null,
    done: true,
    ...(end.state === undefined ? {} : { state: end.state }),
    truncated: end.truncated,
    ...(weightsVersion === undefined ? {} : { weightsVersion }),
  };
}
