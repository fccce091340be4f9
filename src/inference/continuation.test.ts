import { beforeAll, describe, expect, it } from 'vitest';
import { MASKED, type Message } from '../schema/scored-data.js';
import { continuePrompt, generatedTexts } from './continuation.js';
import { TokenizationDriftError } from './openai-client.js';
import { loadTokenizer, type Tokenizer } from './tokenizer.js';

let qwen: Tokenizer;
beforeAll(async () => {
  qwen = await loadTokenizer('qwen3');
});

const prompt: Message[] = [
  { role: 'system', content: 'You answer with tools.' },
  { role: 'user', content: 'Weather in Paris?' },
];
const call = { id: 'c0', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } };
const callText = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const toolTurn: Message = { role: 'tool', content: '18 C, cloudy', tool_call_id: 'c0' };

/** The sequence after one turn: the prompt masked, the completion's ids trained. */
function afterTurn(promptIds: number[], completion: number[]) {
  return { tokens: [...promptIds, ...completion], masks: [...promptIds.map(() => MASKED), ...completion] };
}

describe('continuePrompt', () => {
  it('renders a first turn exactly as the tokenizer encodes the chat', () => {
    expect(continuePrompt(qwen, { tokens: [], masks: [] }, prompt)).toEqual(qwen.encodeChat(prompt, { addGenerationPrompt: true }));
  });

  it("passes template variables through: Qwen3's enable_thinking switch", () => {
    const off = continuePrompt(qwen, { tokens: [], masks: [] }, prompt, undefined, { enable_thinking: false });
    expect(off).toEqual(qwen.encodeChat(prompt, { addGenerationPrompt: true, extra: { enable_thinking: false } }));
    expect(qwen.decode(off)).toMatch(/<think>\n\n<\/think>\n\n$/);
    expect(continuePrompt(qwen, { tokens: [], masks: [] }, prompt, undefined, { enable_thinking: true })).toEqual(
      qwen.encodeChat(prompt, { addGenerationPrompt: true }),
    );
  });

  it('extends a tool-calling turn to exactly the whole conversation rendered by the Qwen template', () => {
    const first = continuePrompt(qwen, { tokens: [], masks: [] }, prompt);
    const completion = [...qwen.encode(callText, { addSpecialTokens: false }), qwen.eos!.id];
    const previous = afterTurn(first, completion);
    const messages: Message[] = [...prompt, { role: 'assistant', content: '', tool_calls: [call] }, toolTurn];
    const next = continuePrompt(qwen, previous, messages);
    expect(next.slice(0, previous.tokens.length)).toEqual(previous.tokens);
    // The template writes the parsed call back exactly as the model wrote it, so nothing drifts.
    expect(next).toEqual(qwen.encodeChat(messages, { addGenerationPrompt: true }));
  });

  it('keeps the model’s own ids where re-tokenizing its text would give others', () => {
    const first = continuePrompt(qwen, { tokens: [], masks: [] }, prompt);
    // "Hello" one character per token: a tokenization the model may sample but the tokenizer never yields.
    const completion = [...[...'Hello'].flatMap((c) => qwen.encode(c, { addSpecialTokens: false })), qwen.eos!.id];
    const previous = afterTurn(first, completion);
    const messages: Message[] = [...prompt, { role: 'assistant', content: 'Hello' }, { role: 'user', content: 'And Lyon?' }];
    const next = continuePrompt(qwen, previous, messages);
    expect(next.slice(0, previous.tokens.length)).toEqual(previous.tokens);
    expect(qwen.decode(next)).toBe(qwen.applyChatTemplate(messages, { addGenerationPrompt: true }));
    expect(next).not.toEqual(qwen.encodeChat(messages, { addGenerationPrompt: true }));
    expect(next.slice(previous.tokens.length)).toEqual(
      qwen.encode('\n<|im_start|>user\nAnd Lyon?<|im_end|>\n<|im_start|>assistant\n', { addSpecialTokens: false }),
    );
  });

  it('closes a turn cut off by the token budget with the template’s end-of-turn, untrained', () => {
    const first = continuePrompt(qwen, { tokens: [], masks: [] }, prompt);
    const completion = qwen.encode('It is', { addSpecialTokens: false });
    const next = continuePrompt(qwen, afterTurn(first, completion), [...prompt, { role: 'assistant', content: 'It is' }, toolTurn]);
    expect(next[first.length + completion.length]).toBe(qwen.eos!.id);
  });

  it('keeps earlier reasoning that the Qwen3 template would drop from history', () => {
    const raw = '<think>\nLook it up.\n</think>\n\nIt is 18 C.';
    const first = continuePrompt(qwen, { tokens: [], masks: [] }, prompt);
    const previous = afterTurn(first, [...qwen.encode(raw, { addSpecialTokens: false }), qwen.eos!.id]);
    const messages: Message[] = [...prompt, { role: 'assistant', content: raw }, { role: 'user', content: 'Thanks' }];
    expect(qwen.applyChatTemplate(messages)).not.toContain('Look it up.');
    const next = continuePrompt(qwen, previous, messages);
    expect(next.slice(0, previous.tokens.length)).toEqual(previous.tokens);
    expect(qwen.decode(next.slice(previous.tokens.length))).toBe('\n<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n');
  });

  it('names the position where the template rewrites history', () => {
    const first = continuePrompt(qwen, { tokens: [], masks: [] }, prompt);
    const previous = afterTurn(first, qwen.encode('Hi', { addSpecialTokens: false }));
    // Qwen3 renders a final assistant message after the last query with an empty think block it never generated.
    const error = (() => {
      try {
        continuePrompt(qwen, previous, [...prompt, { role: 'assistant', content: 'Hi' }]);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(TokenizationDriftError);
    const at = qwen.decode(first).length;
    expect((error as Error).message).toContain(`character ${at}, in token ${first.length} of ${first.length + 1}`);
    expect((error as Error).message).toContain('<think>');
  });

  it('refuses a conversation with fewer assistant messages than generated turns', () => {
    const first = continuePrompt(qwen, { tokens: [], masks: [] }, prompt);
    expect(() => continuePrompt(qwen, afterTurn(first, [9707]), [...prompt, toolTurn])).toThrow(TokenizationDriftError);
  });
});

describe('generatedTexts', () => {
  it('decodes each trained run with its special tokens, without the end-of-turn token', () => {
    const eos = qwen.eos!.id;
    const tokens = [1, 2, 9707, eos, 3, 151667, 9707, 151643, 4];
    const masks = tokens.map((t, i) => ([2, 3, 5, 6, 7].includes(i) ? t : MASKED));
    expect(generatedTexts(qwen, { tokens, masks })).toEqual(['Hello', '<think>Hello<|endoftext|>']);
  });
});
