import type { Message } from '../schema/scored-data.js';
import type { ModelClient, ToolResultMessage } from './define.js';
import type { LoadedEnvironment } from './loaded.js';
import { toScoreResult } from './rewards.js';
import { withThinkingPrompt } from './thinking.js';
import { executeToolCall, isTool, parseToolCalls, toOpenAITool, type ToolCallOutcome } from './tools.js';

/** One assistant turn: the conversation (and the tools offered) in, the assistant's message out. */
export type AssistantTurn = (messages: Message[], tools: Record<string, unknown>[] | undefined) => Promise<Message>;

export interface EpisodeOptions {
  itemIndex: number;
  sample?: number;
  maxTurns: number;
  judge: ModelClient;
  signal?: AbortSignal;
}

/** A played episode: the whole conversation, the final completion, what `parse` and `score` made of it, and the turns. */
export interface Episode {
  messages: Message[];
  completion: string;
  parsed: unknown;
  score: number;
  metrics: Record<string, number>;
  turns: number;
}

/**
 * Runs one trajectory of an environment in this process, without Temporal: the same prompt, tools, steps, parser and
 * reward as a rollout group, for evaluation and as the plain-loop baseline of the benchmarks. Nothing is durable here.
 */
export async function runEpisode(environment: LoadedEnvironment, turnOf: AssistantTurn, options: EpisodeOptions): Promise<Episode> {
  const { definition, config, items } = environment;
  const item = items.get(options.itemIndex);
  const live = { signal: options.signal ?? new AbortController().signal, heartbeat: () => undefined };
  const hook = {
    item,
    config,
    itemIndex: options.itemIndex,
    groupSize: 1,
    groupId: `episode-${options.itemIndex}-${options.sample ?? 0}`,
    ...live,
  };
  const group = (await definition.setup?.(hook)) ?? null;
  try {
    return await play(environment, item, group, turnOf, options);
  } finally {
    await definition.teardown?.({ ...hook, group });
  }
}

async function play(
  environment: LoadedEnvironment,
  item: unknown,
  group: unknown,
  turnOf: AssistantTurn,
  options: EpisodeOptions,
): Promise<Episode> {
  const { definition, config } = environment;
  const sample = options.sample ?? 0;
  const offered = (await definition.tools?.(item, config)) ?? [];
  const tools = offered.filter(isTool);
  const rendered = offered.length > 0 ? offered.map(toOpenAITool) : undefined;
  const live = { signal: options.signal ?? new AbortController().signal, heartbeat: () => undefined };
  const messages = structuredClone(withThinkingPrompt(definition.prompt(item, config), config));
  let state = definition.initialState?.(item, sample, config) ?? null;
  const turnRewards: number[] = [];
  const outcomes: Partial<Record<ToolCallOutcome, number>> = {};
  let turns = 0;
  for (let turn = 0; turn < options.maxTurns; turn++) {
    const answer = await turnOf(messages, rendered);
    messages.push({ ...answer, role: 'assistant' });
    turns = turn + 1;
    if (turns >= options.maxTurns || (!definition.step && tools.length === 0)) break;
    const calls = tools.length > 0 ? parseToolCalls(answer, `call-${turn}-${sample}`).calls : [];
    const toolResults: ToolResultMessage[] = [];
    for (const [call, request] of calls.entries()) {
      const context = {
        item,
        state,
        group,
        sample,
        turn,
        call,
        idempotencyKey: `episode/${options.itemIndex}/${sample}/${turn}/${call}`,
        ...live,
      };
      const result = await executeToolCall(tools, request, context);
      state = context.state;
      outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1;
      toolResults.push({ role: 'tool', tool_call_id: request.id, name: request.name, content: result.content });
    }
    messages.push(...toolResults);
    if (!definition.step) {
      if (calls.length === 0) break;
      continue;
    }
    const stepped = await definition.step({ item, messages, turn, sample, state, toolResults, group, config, ...live }, config);
    messages.push(...stepped.messages);
    if (stepped.state !== undefined) state = stepped.state;
    if (stepped.reward !== undefined) turnRewards.push(stepped.reward);
    if (stepped.done) break;
  }
  const last = [...messages].reverse().find((m) => m.role === 'assistant') ?? { role: 'assistant', content: '' };
  const completion = typeof last.content === 'string' ? last.content : '';
  const { calls, malformed } = parseToolCalls(last);
  const context = { item, config, sample, toolCalls: calls, malformedToolCalls: malformed, messages, finishReason: 'stop', state, ...live };
  const parsed = await definition.parse(completion, item, context);
  // The judge's questions about this one-trajectory group (no group rescoring: evaluation scores items alone).
  const judgements: Record<string, string[]> = {};
  const requests =
    (await definition.judge?.({ item, config, completions: [completion], parsed: [parsed], messages: [messages], group })) ?? [];
  for (const request of requests) {
    judgements[request.id] = await options.judge.complete(request.messages, {
      n: request.n ?? 1,
      temperature: request.temperature ?? 0,
      ...(request.maxTokens === undefined ? {} : { maxTokens: request.maxTokens }),
    });
  }
  const result = toScoreResult(
    await definition.score({ ...context, parsed, completion, turnRewards, judge: options.judge, group, judgements }),
  );
  const toolMetrics: Record<string, number> =
    tools.length > 0 ? { tool_calls: Object.values(outcomes).reduce((a, b) => a + b, 0), tool_errors: outcomes.tool_error ?? 0 } : {};
  return { messages, completion, parsed, score: result.score, metrics: { ...toolMetrics, ...result.metrics }, turns };
}
