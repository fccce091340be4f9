import type { Message } from '../schema/scored-data.js';
import { continuePrompt } from './continuation.js';
import { buildTrainingSequence, extendTrainingSequence, TokenizationDriftError } from './openai-client.js';
import { hermesAssistantMessage, type OpenAIToolCallOut } from './tool-calls.js';
import type { Tokenizer } from './tokenizer.js';
import type { Completion } from './types.js';

/** The assistant message a session answered with for one generated turn. */
export interface AnsweredTurn {
  content: string;
  tool_calls?: OpenAIToolCallOut[];
}

/**
 * One sequence of a session, as Atropos's ManagedServer keeps it: the token ids (prompt and completions), the
 * masks (`-100` on prompt positions, the token id on generated ones) and the sampling logprobs (`1.0` on prompt
 * positions). `turns` are the messages this session answered with, one per generated turn, so that a later
 * request is known to continue this sequence only when it carries those answers back.
 */
export interface SequenceNode {
  tokens: number[];
  masks: number[];
  logprobs: number[];
  finishReason: string | null;
  turns: AnsweredTurn[];
}

/** The ids a request sends, and the sequence they continue (null: a new one). */
export interface SessionPrompt {
  ids: number[];
  continues: SequenceNode | null;
}

/** What a chat request asks of a session. */
export interface SessionRequest {
  messages: Message[];
  tools?: Record<string, unknown>[] | undefined;
  /** Parse `<tool_call>` blocks into OpenAI `tool_calls` (OpenAI's `tool_choice` other than "none"). */
  parseTools: boolean;
}

const argumentsOf = (call: { function?: { arguments?: unknown } }) => {
  const raw = call.function?.arguments;
  try {
    return JSON.stringify(typeof raw === 'string' ? JSON.parse(raw) : (raw ?? {}));
  } catch {
    return String(raw);
  }
};

/** Whether a message sent back is the answer this session gave (tool call ids aside, which clients may rewrite). */
function sameAnswer(sent: Message, answered: AnsweredTurn): boolean {
  if ((typeof sent.content === 'string' ? sent.content : '') !== answered.content) return false;
  const sentCalls = (Array.isArray(sent.tool_calls) ? sent.tool_calls : []) as { function?: { name?: unknown; arguments?: unknown } }[];
  const calls = answered.tool_calls ?? [];
  return (
    sentCalls.length === calls.length &&
    sentCalls.every((call, i) => call.function?.name === calls[i]!.function.name && argumentsOf(call) === argumentsOf(calls[i]!))
  );
}

/**
 * The token bookkeeping of one proxy session (Atropos's `ManagedServer`): each request either continues one of
 * the session's sequences, whose ids are then kept as they are and only the new turns are tokenized
 * (`continuePrompt`), or starts a new one. In tree mode (`track_tree`) every answer is a sequence of its own.
 */
export class ManagedSession {
  private readonly list: SequenceNode[] = [];
  private readonly tree = new Map<string, SequenceNode>();

  constructor(
    readonly tokenizer: Tokenizer,
    readonly trackTree: boolean,
  ) {}

  get nodes(): SequenceNode[] {
    return this.trackTree ? [...this.tree.values()] : [...this.list];
  }

  /**
   * The prompt a request sends: a continuation of the first sequence whose answers the request carries back and
   * whose text the chat template still reproduces, else the conversation rendered anew.
   */
  prompt({ messages, tools }: SessionRequest): SessionPrompt {
    if (!this.trackTree) {
      const assistants = messages.filter((m) => m.role === 'assistant');
      for (const node of this.list) {
        const sent = assistants.slice(assistants.length - node.turns.length);
        if (sent.length !== node.turns.length || !sent.every((m, k) => sameAnswer(m, node.turns[k]!))) continue;
        try {
          return { ids: continuePrompt(this.tokenizer, node, messages, tools), continues: node };
        } catch (error) {
          if (!(error instanceof TokenizationDriftError)) throw error;
        }
      }
    }
    return { ids: continuePrompt(this.tokenizer, { tokens: [], masks: [] }, messages, tools), continues: null };
  }

  /**
   * Records the completions of `prompt`, one sequence each (the first takes the place of the sequence it continues,
   * as ManagedServer does), and returns the assistant messages to answer with.
   */
  record(prompt: SessionPrompt, completions: Completion[], parseTools: boolean, idPrefix: string): AnsweredTurn[] {
    return completions.map((completion, i) => {
      if (!completion.tokenIds || !completion.logprobs) {
        throw new Error('the inference server returned no token ids or logprobs for a token-id prompt');
      }
      const generated = { tokenIds: completion.tokenIds, logprobs: completion.logprobs };
      const previous = prompt.continues;
      const sequence = previous
        ? extendTrainingSequence(
            { tokens: previous.tokens, masks: previous.masks, inferenceLogprobs: previous.logprobs },
            prompt.ids,
            generated,
          )
        : buildTrainingSequence(prompt.ids, generated);
      const answer: AnsweredTurn = parseTools ? hermesAssistantMessage(completion.text, `${idPrefix}-${i}`) : { content: completion.text };
      const node: SequenceNode = {
        tokens: sequence.tokens,
        masks: sequence.masks,
        logprobs: sequence.inferenceLogprobs,
        finishReason: completion.finishReason,
        turns: [...(previous?.turns ?? []), answer],
      };
      if (this.trackTree) this.tree.set(this.tokenizer.decode(node.tokens), node);
      else {
        const at = i === 0 && previous ? this.list.indexOf(previous) : -1;
        if (at >= 0) this.list[at] = node;
        else this.list.push(node);
      }
      return answer;
    });
  }
}

/** A sequence as Atropos's `SequenceNode.model_dump()` writes it. */
export function nodeJson(tokenizer: Tokenizer, node: SequenceNode) {
  return {
    full_text: tokenizer.decode(node.tokens),
    tokens: node.tokens,
    masked_tokens: node.masks,
    logprobs: node.logprobs,
    metadata: { finish_reason: node.finishReason ?? 'stop' },
  };
}
