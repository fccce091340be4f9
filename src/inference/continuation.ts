import { MASKED, type Message } from '../schema/scored-data.js';
import type { TokenGenerateRequest } from './types.js';
import type { ChatMessage } from './chat-template.js';
import { TokenizationDriftError } from './openai-client.js';
import type { Tokenizer } from './tokenizer.js';
import type { Completion, GenerateOptions } from './types.js';

/** A server that continues a prompt given as token ids (`ServerManager.generateTokens`). */
export interface TokenGenerator {
  generateTokens(request: TokenGenerateRequest, options?: GenerateOptions): Promise<Completion[]>;
}

/**
 * What a worker needs to grow multi-turn sequences token by token, as Atropos's ManagedServer does:
 * the served model's tokenizer (its chat template renders every prompt) and a token-id client.
 */
export interface Continuation {
  tokenizer: Tokenizer;
  client: TokenGenerator;
  /** Turns `<tool_call>{json}</tool_call>` blocks of a completion (Qwen, Hermes) into OpenAI `tool_calls`. @default none */
  toolParser?: 'hermes';
}

/** A trajectory's sequence so far: its token ids and masks (the token id where the model generated it). */
export interface SequenceSoFar {
  tokens: readonly number[];
  masks: readonly number[];
}

// Stand-ins for reasoning markers in earlier completions, so that templates which drop or reformat
// reasoning (Qwen3 does) render the model's raw text unchanged, like ManagedServer's think-block protection.
const PROTECTED = [
  ['<think>', '\u0000clotho:think\u0000'],
  ['</think>', '\u0000clotho:/think\u0000'],
] as const;

/**
 * The next prompt of a trajectory as token ids: the sequence so far, unchanged, plus the ids of what
 * the chat template renders after it (tool results, the next user turn, the generation prompt). The
 * model's earlier turns are rendered from their own tokens (raw text, never re-parsed tool calls), and
 * the rendering must start with the decoded sequence so far; otherwise a `TokenizationDriftError`
 * names where they part. Only the suffix is tokenized, without added special tokens. `extra` are more template
 * variables (`enable_thinking`).
 */
export function continuePrompt(
  tokenizer: Tokenizer,
  previous: SequenceSoFar,
  messages: readonly Message[],
  tools?: readonly Record<string, unknown>[],
  extra?: Record<string, unknown>,
): number[] {
  const rendered = renderWithRawTurns(tokenizer, previous, messages, tools, extra);
  const prefix = tokenizer.decode(previous.tokens);
  if (!rendered.startsWith(prefix)) throw driftError(tokenizer, previous.tokens, prefix, rendered);
  const suffix = rendered.slice(prefix.length);
  return [...previous.tokens, ...(suffix === '' ? [] : tokenizer.encode(suffix, { addSpecialTokens: false }))];
}

/**
 * The model's raw text of each completion in the sequence: each maximal run of trained positions,
 * decoded with special tokens, without the end-of-turn token the template writes itself.
 */
export function generatedTexts(tokenizer: Tokenizer, previous: SequenceSoFar): string[] {
  const runs: number[][] = [];
  previous.masks.forEach((mask, i) => {
    if (mask === MASKED) return;
    if (i === 0 || previous.masks[i - 1] === MASKED) runs.push([]);
    runs.at(-1)!.push(previous.tokens[i]!);
  });
  return runs.map((run) => tokenizer.decode(run.at(-1) === tokenizer.eos?.id ? run.slice(0, -1) : run));
}

function renderWithRawTurns(
  tokenizer: Tokenizer,
  previous: SequenceSoFar,
  messages: readonly Message[],
  tools: readonly Record<string, unknown>[] | undefined,
  extra: Record<string, unknown> | undefined,
): string {
  const raw = generatedTexts(tokenizer, previous);
  const assistants = messages.flatMap((m, i) => (m.role === 'assistant' ? [i] : []));
  if (assistants.length < raw.length) {
    throw new TokenizationDriftError(
      `the sequence holds ${raw.length} generated turns but the conversation only ${assistants.length} assistant messages`,
    );
  }
  // The model's turns are the last assistant messages: the prompt's own (few-shot) examples come first.
  const generated = new Map(assistants.slice(assistants.length - raw.length).map((at, k) => [at, raw[k]!]));
  const chat: ChatMessage[] = messages.map((m, i) => {
    const text = generated.get(i);
    return text === undefined ? m : { role: 'assistant', content: PROTECTED.reduce((t, [mark, stand]) => t.replaceAll(mark, stand), text) };
  });
  const rendered = tokenizer.applyChatTemplate(chat, {
    addGenerationPrompt: messages.at(-1)?.role !== 'assistant',
    ...(tools ? { tools: [...tools] } : {}),
    ...(extra ? { extra } : {}),
  });
  return PROTECTED.reduce((t, [mark, stand]) => t.replaceAll(stand, mark), rendered);
}

function driftError(tokenizer: Tokenizer, tokens: readonly number[], prefix: string, rendered: string): TokenizationDriftError {
  let at = 0;
  while (at < prefix.length && prefix[at] === rendered[at]) at++;
  // The token holding character `at`: the shortest run of tokens whose text reaches past it.
  let low = 0;
  let high = tokens.length - 1;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (tokenizer.decode(tokens.slice(0, mid + 1)).length > at) high = mid;
    else low = mid + 1;
  }
  const show = (s: string) => JSON.stringify(s.slice(Math.max(0, at - 20), at + 20));
  return new TokenizationDriftError(
    `the chat template does not reproduce the sequence so far: they part at character ${at}, in token ${low} ` +
      `of ${tokens.length} (id ${tokens[low]}); the sequence reads ${show(prefix)}, the template renders ${show(rendered)}. ` +
      'The template rewrites earlier turns (reasoning dropped, tool calls reformatted, whitespace trimmed)',
  );
}
