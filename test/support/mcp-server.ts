/**
 * A small stdio MCP server for tests of `mcpTools`: run with `node --import tsx test/support/mcp-server.ts`.
 * Tools: reverse(text), fail() (a tool error), crash() (the process exits mid-call), pid(), image(), meta() (the
 * request's `_meta` as JSON).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'clotho-test', version: '1.0.0' });

server.registerTool('reverse', { description: 'Reverses a text', inputSchema: { text: z.string() } }, async ({ text }) => ({
  content: [{ type: 'text', text: [...text].reverse().join('') }],
}));

server.registerTool('fail', { description: 'Always reports an error' }, async () => ({
  isError: true,
  content: [{ type: 'text', text: 'this tool always fails' }],
}));

// Exits without answering, as a server that segfaults or is OOM-killed would.
server.registerTool('crash', { description: 'Kills the server process' }, async () => process.exit(3));

server.registerTool('pid', { description: 'The server process id' }, async () => ({
  content: [{ type: 'text', text: String(process.pid) }],
}));

server.registerTool('meta', { description: 'The request metadata the client sent' }, async (extra) => ({
  content: [{ type: 'text', text: JSON.stringify(extra._meta ?? {}) }],
}));

server.registerTool('image', { description: 'A caption and a 1-pixel PNG' }, async () => ({
  content: [
    { type: 'text', text: 'a red dot' },
    {
      type: 'image',
      mimeType: 'image/png',
      data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==',
    },
  ],
}));

await server.connect(new StdioServerTransport());
