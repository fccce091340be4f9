/**
 * Atropos's thinking settings (`thinking_mode`, `reasoning_effort`, `max_reasoning_tokens`, `custom_thinking_prompt`),
 * read from an environment's config: the reasoning asked of the model with every request, and the thinking system
 * prompt put before each conversation.
 */
import type { BaseEnvConfig } from '../config/schemas.js';
import type { Reasoning } from '../schema/rollout.js';
import type { Message } from '../schema/scored-data.js';

type ThinkingConfig = Pick<BaseEnvConfig, 'thinking_mode' | 'reasoning_effort' | 'max_reasoning_tokens' | 'custom_thinking_prompt'>;

/**
 * The reasoning to ask for, or undefined when none: as in Atropos's ReasoningConfig it is on with `thinking_mode`, and
 * also whenever an effort or a token budget is given (OpenRouter needs reasoning enabled for either).
 */
export function reasoningOf(config: ThinkingConfig): Reasoning | undefined {
  const { thinking_mode, reasoning_effort, max_reasoning_tokens } = config;
  if (!thinking_mode && reasoning_effort === null && max_reasoning_tokens === null) return undefined;
  return {
    ...(reasoning_effort === null ? {} : { effort: reasoning_effort }),
    ...(max_reasoning_tokens === null ? {} : { maxTokens: max_reasoning_tokens }),
  };
}

/**
 * The conversation with the thinking prompt first, as Atropos's environments build their system message: with
 * `thinking_mode` on and a `custom_thinking_prompt` given, the prompt goes before the conversation's own system
 * message (a blank line between) or becomes one. Otherwise (Atropos injects no prompt by default) the messages are
 * returned unchanged. Never mutates its input.
 */
export function withThinkingPrompt(messages: Message[], config: ThinkingConfig): Message[] {
  const prompt = config.thinking_mode ? config.custom_thinking_prompt : null;
  if (prompt === null || prompt === '') return messages;
  const [first, ...rest] = messages;
  if (first?.role !== 'system') return [{ role: 'system', content: prompt }, ...messages];
  const { content } = first;
  const merged =
    typeof content === 'string' && content !== ''
      ? `${prompt}\n\n${content}`
      : Array.isArray(content)
        ? [{ type: 'text', text: `${prompt}\n\n` }, ...content]
        : prompt;
  return [{ ...first, content: merged }, ...rest];
}
