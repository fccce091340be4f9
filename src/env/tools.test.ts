import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { argumentProblems, defineTool, executeToolCall, isTool, toOpenAITool, ToolError, type ToolContext } from './tools.js';

const context = (): ToolContext => ({
  item: null,
  state: { n: 0 },
  group: null,
  sample: 0,
  turn: 0,
  call: 0,
  idempotencyKey: 'k',
  signal: new AbortController().signal,
  heartbeat: () => undefined,
});

const divide = defineTool({
  name: 'divide',
  description: 'a / b',
  parameters: z.object({ a: z.number(), b: z.number().describe('the divisor') }),
  execute: ({ a, b }) => {
    if (b === 0) throw new ToolError('division by zero');
    return String(a / b);
  },
});

const lookup = defineTool({
  name: 'lookup',
  description: 'finds a key',
  parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'], additionalProperties: false },
  execute: (args, ctx) => {
    ctx.state.n += 1;
    return { found: args.key === 'a' };
  },
});

describe('tools', () => {
  it('renders zod and JSON Schema parameters as OpenAI tools, and passes plain definitions through', () => {
    expect(toOpenAITool(divide)).toEqual({
      type: 'function',
      function: {
        name: 'divide',
        description: 'a / b',
        parameters: {
          type: 'object',
          properties: { a: { type: 'number' }, b: { type: 'number', description: 'the divisor' } },
          required: ['a', 'b'],
        },
      },
    });
    const plain = { type: 'function', function: { name: 'f', parameters: {} } };
    expect(toOpenAITool(plain)).toBe(plain);
    expect(isTool(plain)).toBe(false);
    expect(isTool(lookup)).toBe(true);
  });

  it('names every argument problem, for zod and for JSON Schema', () => {
    expect(argumentProblems(divide, { a: 1 })).toEqual(['b: Invalid input: expected number, received undefined']);
    expect(argumentProblems(lookup, { key: 3, extra: true })).toEqual([
      'arguments: must NOT have additional properties',
      'key: must be string',
    ]);
    expect(argumentProblems(lookup, { key: 'a' })).toEqual([]);
  });

  it('answers the model for its own mistakes and a ToolError, and lets infrastructure failures through', async () => {
    const tools = [divide, lookup];
    const run = (name: string, args: Record<string, unknown>, ctx = context()) =>
      executeToolCall(tools, { id: 'c', name, arguments: args }, ctx);
    expect(await run('divide', { a: 6, b: 3 })).toEqual({ outcome: 'ok', content: '2' });
    expect(await run('divide', { a: 6, b: 0 })).toEqual({ outcome: 'tool_error', content: 'Error: division by zero' });
    expect(await run('divide', { a: 6 })).toMatchObject({
      outcome: 'invalid_arguments',
      content: expect.stringContaining('invalid arguments for divide: b:'),
    });
    expect(await run('nope', {})).toEqual({ outcome: 'unknown_tool', content: 'Error: unknown tool "nope"; available: divide, lookup' });
    const ctx = context();
    expect(await run('lookup', { key: 'a' }, ctx)).toEqual({ outcome: 'ok', content: '{"found":true}' });
    expect(ctx.state).toEqual({ n: 1 });
    const down = defineTool({
      name: 'down',
      description: '',
      parameters: z.object({}),
      execute: () => {
        throw new Error('ECONNREFUSED');
      },
    });
    await expect(executeToolCall([down], { id: 'c', name: 'down', arguments: {} }, context())).rejects.toThrow('ECONNREFUSED');
  });
});
