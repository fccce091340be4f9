import { afterAll, describe, expect, it } from 'vitest';
import { closeMcpServers, MCP_IDEMPOTENCY_KEY, mcpResultText, mcpTools, type McpServerConfig } from './mcp.js';
import { executeToolCall, toOpenAITool, ToolError, type Tool, type ToolContext } from './tools.js';

// A real MCP server process, started the way a user would start a TypeScript one.
const SERVER: McpServerConfig = { command: process.execPath, args: ['--import', 'tsx', 'test/support/mcp-server.ts'] };

const context = (): ToolContext => ({
  item: null,
  state: null,
  group: null,
  sample: 0,
  turn: 0,
  call: 0,
  idempotencyKey: 'test',
  signal: new AbortController().signal,
  heartbeat: () => undefined,
});
const tool = (tools: Tool[], name: string): Tool => tools.find((t) => t.name === name)!;

afterAll(closeMcpServers);

describe('mcpTools', () => {
  it('lists the server’s tools with their JSON Schema and runs them', async () => {
    const tools = await mcpTools([SERVER]);
    expect(tools.map((t) => t.name).sort()).toEqual(['crash', 'fail', 'image', 'meta', 'pid', 'reverse']);
    const reverse = tool(tools, 'reverse');
    expect(toOpenAITool(reverse)).toMatchObject({
      type: 'function',
      function: {
        name: 'reverse',
        description: 'Reverses a text',
        parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      },
    });
    expect(reverse.parameters).not.toHaveProperty('$schema');
    expect(await reverse.execute({ text: 'clotho' }, context())).toBe('ohtolc');
    // Through the SDK's executor: arguments are checked against the MCP schema (ajv) before the call.
    expect(await executeToolCall(tools, { id: 'c1', name: 'reverse', arguments: { text: 'abc' } }, context())).toEqual({
      outcome: 'ok',
      content: 'cba',
    });
    expect(await executeToolCall(tools, { id: 'c2', name: 'reverse', arguments: { text: 5 } }, context())).toMatchObject({
      outcome: 'invalid_arguments',
    });
  });

  it('sends the call’s idempotency key in the request’s _meta, where MCP servers read request metadata', async () => {
    const meta = tool(await mcpTools([SERVER]), 'meta');
    const sent = JSON.parse(String(await meta.execute({}, { ...context(), idempotencyKey: 'run/env/item-3/turn-2/sample-1/call-0' })));
    expect(sent).toMatchObject({ [MCP_IDEMPOTENCY_KEY]: 'run/env/item-3/turn-2/sample-1/call-0' });
    expect(MCP_IDEMPOTENCY_KEY).toBe('clotho/idempotency-key');
  });

  it('starts one process for equal configs, however often the tools are asked for', async () => {
    const first = await tool(await mcpTools([SERVER]), 'pid').execute({}, context());
    const second = await tool(await mcpTools([{ ...SERVER, timeout_s: 30 }]), 'pid').execute({}, context());
    expect(second).toBe(first);
  });

  it('turns isError into a ToolError the model sees', async () => {
    const tools = await mcpTools([SERVER]);
    await expect(tool(tools, 'fail').execute({}, context())).rejects.toThrow(ToolError);
    await expect(tool(tools, 'fail').execute({}, context())).rejects.toThrow('this tool always fails');
    expect(await executeToolCall(tools, { id: 'c', name: 'fail', arguments: {} }, context())).toEqual({
      outcome: 'tool_error',
      content: 'Error: this tool always fails',
    });
  });

  it('summarizes content the model cannot read as text', async () => {
    const text = await tool(await mcpTools([SERVER]), 'image').execute({}, context());
    expect(text).toBe('a red dot\n[image: image/png, 70 bytes]');
    expect(mcpResultText({ content: [], structuredContent: { answer: 42 } })).toBe('{"answer":42}');
    expect(mcpResultText({ content: [{ type: 'resource', resource: { uri: 'file:///a.txt', text: 'hello' } }] })).toBe('hello');
  });

  it('surfaces a crashed server as a plain error and starts it again on the next call', async () => {
    const tools = await mcpTools([SERVER]);
    const before = await tool(tools, 'pid').execute({}, context());
    const crash = tool(tools, 'crash').execute({}, context());
    await expect(crash).rejects.toThrow(/MCP tool crash .* failed/);
    await expect(crash).rejects.not.toBeInstanceOf(ToolError);
    // An infrastructure failure propagates from the executor (the tool step retries it); it is never an answer.
    await expect(executeToolCall(tools, { id: 'c', name: 'crash', arguments: {} }, context())).rejects.not.toBeInstanceOf(ToolError);
    const after = await tool(tools, 'pid').execute({}, context());
    expect(after).toMatch(/^\d+$/);
    expect(after).not.toBe(before);
    expect(await tool(tools, 'reverse').execute({ text: 'ok' }, context())).toBe('ko');
  });

  it('reports a server that cannot start as a plain error, and tries again next time', async () => {
    const missing = { command: '/nonexistent/mcp-server' };
    await expect(mcpTools([missing])).rejects.toThrow(/did not start/);
    await expect(mcpTools([missing])).rejects.toThrow(/did not start/);
  });

  it('refuses two servers that serve the same tool name', async () => {
    const twin = { ...SERVER, env: { TWIN: '1' } };
    await expect(mcpTools([SERVER, twin])).rejects.toThrow(/"reverse" is served by both/);
  });
});

describe('mcpTools under concurrency', () => {
  it('shares one process between calls that arrive before it has started', async () => {
    await closeMcpServers();
    const lists = await Promise.all([mcpTools([SERVER]), mcpTools([SERVER]), mcpTools([SERVER])]);
    const pids = await Promise.all(lists.map((tools) => tool(tools, 'pid').execute({}, context())));
    expect(new Set(pids).size).toBe(1);
  });
});
