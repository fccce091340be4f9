import { describe, expect, it } from 'vitest';
import { hermesAssistantMessage, parseToolCalls } from './tool-calls.js';

const weather = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

describe('hermesAssistantMessage', () => {
  it('turns <tool_call> blocks into OpenAI tool calls and keeps the text before them', () => {
    const text = `Let me check.\n${weather}\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>`;
    expect(hermesAssistantMessage(text, 'call-1')).toEqual({
      content: 'Let me check.\n',
      tool_calls: [
        { id: 'call-1-0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call-1-1', type: 'function', function: { name: 'get_time', arguments: '{}' } },
      ],
    });
  });

  it('leaves text without a well-formed call as content, and keeps a malformed block visible beside good ones', () => {
    const bad = '<tool_call>\n{"name": get_weather}\n</tool_call>';
    expect(hermesAssistantMessage(bad, 'c')).toEqual({ content: bad });
    expect(hermesAssistantMessage('18 C', 'c')).toEqual({ content: '18 C' });
    const mixed = hermesAssistantMessage(`${weather}${bad}`, 'c');
    expect(mixed.content).toBe(`${weather}${bad}`);
    expect(mixed.tool_calls).toHaveLength(1);
  });
});

describe('parseToolCalls', () => {
  it('reads OpenAI tool_calls, parsing their JSON arguments', () => {
    const message = { content: null, tool_calls: [{ id: 'x', type: 'function', function: { name: 'f', arguments: '{"a": 1}' } }] };
    expect(parseToolCalls(message)).toEqual({ calls: [{ id: 'x', name: 'f', arguments: { a: 1 } }], malformed: [] });
  });

  it('counts malformed JSON, non-object arguments and a cut-off block as malformed, never throwing', () => {
    const text = `${weather}<tool_call>{"name": "f", "arguments": [1]}</tool_call><tool_call>{"name": "g", "argu`;
    const { calls, malformed } = parseToolCalls({ content: text });
    expect(calls.map((c) => c.name)).toEqual(['get_weather']);
    expect(malformed).toHaveLength(2);
    const openai = parseToolCalls({ content: '', tool_calls: [{ id: 'y', function: { name: 'f', arguments: '{oops' } }] });
    expect(openai.calls).toEqual([]);
    expect(openai.malformed).toHaveLength(1);
  });
});
