import { describe, expect, it } from 'vitest';
import { BaseEnvConfigSchema } from '../config/schemas.js';
import { defineEnvironment } from './define.js';
import type { Message } from '../schema/scored-data.js';
import { playEpisode } from './testing.js';
import { reasoningOf, withThinkingPrompt } from './thinking.js';

const config = (fields: Record<string, unknown>) => BaseEnvConfigSchema.parse(fields);
const user = { role: 'user', content: 'What is 2+2?' };

describe('reasoningOf', () => {
  it('is off by default, on with thinking_mode, and on by itself with an effort or a token budget', () => {
    expect(reasoningOf(config({}))).toBeUndefined();
    expect(reasoningOf(config({ thinking_mode: true }))).toEqual({});
    expect(reasoningOf(config({ reasoning_effort: 'low' }))).toEqual({ effort: 'low' });
    expect(reasoningOf(config({ max_reasoning_tokens: 2048 }))).toEqual({ maxTokens: 2048 });
  });
});

describe('withThinkingPrompt', () => {
  it('prepends the thinking prompt as a system message in thinking mode', () => {
    const messages = [user];
    expect(withThinkingPrompt(messages, config({ thinking_mode: true, custom_thinking_prompt: 'Think in <think>.' }))).toEqual([
      { role: 'system', content: 'Think in <think>.' },
      user,
    ]);
    expect(messages).toEqual([user]);
  });

  it("merges into the environment's system message, thinking prompt first", () => {
    const system = { role: 'system', content: 'Answer in \\boxed{}.' };
    expect(withThinkingPrompt([system, user], config({ thinking_mode: true, custom_thinking_prompt: 'Think.' }))).toEqual([
      { role: 'system', content: 'Think.\n\nAnswer in \\boxed{}.' },
      user,
    ]);
    expect(
      withThinkingPrompt(
        [{ role: 'system', content: [{ type: 'text', text: 'Rules.' }] }, user],
        config({ thinking_mode: true, custom_thinking_prompt: 'Think.' }),
      )[0],
    ).toEqual({
      role: 'system',
      content: [
        { type: 'text', text: 'Think.\n\n' },
        { type: 'text', text: 'Rules.' },
      ],
    });
  });

  it('adds nothing without a prompt or outside thinking mode (Atropos injects none by default)', () => {
    const messages = [user];
    expect(withThinkingPrompt(messages, config({ thinking_mode: true }))).toBe(messages);
    expect(withThinkingPrompt(messages, config({ custom_thinking_prompt: 'Think.' }))).toBe(messages);
  });
});

describe('an evaluation episode in thinking mode', () => {
  const echo = defineEnvironment({
    name: 'echo',
    description: 'a test environment',
    config: {},
    load: async () => ({ size: 1, get: () => 'Say hi.' }),
    prompt: (item: string) => [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: item },
    ],
    parse: (completion) => completion,
    score: () => 1,
  });

  it('shows the model the thinking prompt merged into the system message', async () => {
    const seen: Message[][] = [];
    await playEpisode(echo, {
      item: 'Say hi.',
      argv: ['--env.thinking_mode', 'true', '--env.custom_thinking_prompt', 'Think.'],
      replies: async (messages) => {
        seen.push(structuredClone(messages));
        return { role: 'assistant', content: 'hi' };
      },
    });
    expect(seen).toEqual([
      [
        { role: 'system', content: 'Think.\n\nBe brief.' },
        { role: 'user', content: 'Say hi.' },
      ],
    ]);
  });
});
