/**
 * Tools served by MCP servers (Model Context Protocol, stdio transport), offered to the model as Clotho tools.
 * One connection per server and process, opened on first use and reopened after the server dies.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { z } from 'zod';
import { ToolError, type Tool, type ToolContext } from './tools.js';

/** One stdio MCP server: the process to start (`--env.mcp_servers '[{"command": "npx", "args": [...]}]'`). */
export const McpServerConfigSchema = z.strictObject({
  command: z.string().min(1).describe('executable that speaks MCP on stdin/stdout'),
  args: z.array(z.string()).optional(),
  /** Added to the few variables MCP passes on by default (HOME, PATH, USER …). */
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
  /** Seconds one call may take before it fails (an infrastructure error, retried); progress notifications reset it. @default 60 */
  timeout_s: z.number().positive().default(60),
});
/** One stdio MCP server as given in config (`timeout_s` optional). */
export type McpServerConfig = z.input<typeof McpServerConfigSchema>;
type Server = z.output<typeof McpServerConfigSchema>;

interface Connection {
  client: Client;
  transport: StdioClientTransport;
}

// Keyed by what starts the process, so equal configs share one server however often `tools()` asks.
const connections = new Map<string, Promise<Connection>>();
const toolLists = new Map<string, Promise<Tool[]>>();
const live = new Set<StdioClientTransport>();
let exitHookInstalled = false;

const keyOf = (s: Server): string => JSON.stringify([s.command, s.args ?? [], Object.entries(s.env ?? {}).sort(), s.cwd ?? null]);
const describe = (s: Server): string => [s.command, ...(s.args ?? [])].join(' ');

// 'exit' handlers must be synchronous: kill the children rather than close the clients politely.
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const transport of live) {
      try {
        if (transport.pid) process.kill(transport.pid);
      } catch {
        /* already gone */
      }
    }
  });
}

// The MCP SDK (a few hundred ms to import) is loaded by the first tool call or listing, not by importing the SDK.
let sdkModules:
  | Promise<
      typeof import('@modelcontextprotocol/sdk/client/index.js') &
        typeof import('@modelcontextprotocol/sdk/client/stdio.js') &
        typeof import('@modelcontextprotocol/sdk/types.js')
    >
  | undefined;
const mcpSdk = () =>
  (sdkModules ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([client, stdio, types]) => ({ ...client, ...stdio, ...types })));

function connect(server: Server, key: string): Promise<Connection> {
  installExitHook();
  // Cached before it settles, so that concurrent first calls share one process and all see the same failure.
  const pending: Promise<Connection> = open(server, () => {
    if (connections.get(key) === pending) connections.delete(key);
  });
  connections.set(key, pending);
  return pending;
}

async function open(server: Server, unlist: () => void): Promise<Connection> {
  const { Client, StdioClientTransport } = await mcpSdk();
  const transport = new StdioClientTransport({ command: server.command, args: server.args, env: server.env, cwd: server.cwd });
  const client = new Client({ name: 'clotho', version: '0.1.0' });
  live.add(transport);
  const forget = () => {
    live.delete(transport);
    unlist();
  };
  // A server that exits between calls is noticed here, so the next call starts a new one instead of failing.
  client.onclose = forget;
  try {
    await client.connect(transport);
  } catch (error) {
    forget();
    await client.close().catch(() => undefined);
    throw new Error(`MCP server "${describe(server)}" did not start: ${(error as Error).message}`);
  }
  return { client, transport };
}

function connection(server: Server): Promise<Connection> {
  const key = keyOf(server);
  return connections.get(key) ?? connect(server, key);
}

/** Drops a connection whose transport failed; closing it kills the process if it still runs. */
async function drop(server: Server, conn: Connection): Promise<void> {
  const key = keyOf(server);
  if ((await connections.get(key)?.catch(() => null)) === conn) connections.delete(key);
  live.delete(conn.transport);
  await conn.client.close().catch(() => undefined);
}

// Codes of errors the server itself answered: the connection is fine, only this call failed.
const answered = ({ ErrorCode }: Awaited<ReturnType<typeof mcpSdk>>): Set<number> =>
  new Set([ErrorCode.ParseError, ErrorCode.InvalidRequest, ErrorCode.MethodNotFound, ErrorCode.InvalidParams, ErrorCode.InternalError]);

// Size from the base64 length, without decoding what may be megabytes.
const bytes = (base64: string): string => `${Math.floor((base64.length * 3) / 4) - (/=*$/.exec(base64)?.[0].length ?? 0)} bytes`;

/** The fields of an MCP content part that {@link partText} reads; a server of any protocol version may leave any out. */
interface ContentPart {
  type?: unknown;
  text?: unknown;
  mimeType?: unknown;
  data?: unknown;
  uri?: unknown;
  name?: unknown;
  resource?: { text?: unknown; uri?: unknown; mimeType?: unknown; blob?: unknown };
}

/** One content part as text: text as is, everything else summarized (the model cannot see images in a tool result). */
function partText(part: ContentPart): string {
  switch (part.type) {
    case 'text':
      return String(part.text);
    case 'image':
    case 'audio':
      return `[${part.type}: ${part.mimeType}, ${bytes(String(part.data ?? ''))}]`;
    case 'resource_link':
      return `[resource: ${part.uri}${part.name ? ` (${part.name})` : ''}]`;
    case 'resource': {
      const r = part.resource ?? {};
      return typeof r.text === 'string' ? r.text : `[resource: ${r.uri}, ${r.mimeType ?? 'binary'}, ${bytes(String(r.blob ?? ''))}]`;
    }
    default:
      return `[${String(part.type)} content]`;
  }
}

/** A call's result as the text the model reads. */
export function mcpResultText(result: Record<string, unknown>): string {
  if ('toolResult' in result) return JSON.stringify(result.toolResult); // protocol 2024-10-07 servers
  const parts = Array.isArray(result.content) ? result.content.map(partText) : [];
  if (parts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return parts.join('\n');
}

/**
 * Where a `tools/call` request carries Clotho's idempotency key: in the request's `_meta` (MCP's place for request
 * metadata, which servers read as `extra._meta` in the SDKs), under a prefixed name as MCP asks of custom keys. The
 * key is the same on every attempt of one call, so a server that keeps the keys it executed can answer a repeat from
 * its record instead of running the tool again.
 */
export const MCP_IDEMPOTENCY_KEY = 'clotho/idempotency-key';

async function callTool(server: Server, name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
  const conn = await connection(server);
  let result: Record<string, unknown>;
  try {
    result = await conn.client.callTool({ name, arguments: args, _meta: { [MCP_IDEMPOTENCY_KEY]: ctx.idempotencyKey } }, undefined, {
      signal: ctx.signal,
      timeout: server.timeout_s * 1000,
      resetTimeoutOnProgress: true,
      onprogress: () => ctx.heartbeat(),
    });
  } catch (error) {
    if (ctx.signal.aborted) throw error; // cancelled: the SDK told the server; the connection is fine
    const sdk = await mcpSdk();
    const { ErrorCode, McpError } = sdk;
    if (error instanceof McpError && error.code === ErrorCode.InvalidParams) throw new ToolError(error.message);
    // Anything but an answer from the server (closed, timed out, not connected) may mean a dead process.
    if (!(error instanceof McpError && answered(sdk).has(error.code))) await drop(server, conn);
    throw new Error(`MCP tool ${name} on "${describe(server)}" failed: ${(error as Error).message}`, { cause: error });
  }
  const text = mcpResultText(result);
  if (result.isError === true) throw new ToolError(text || `${name} failed`);
  return text;
}

async function listTools(server: Server): Promise<Tool[]> {
  const { client } = await connection(server);
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    for (const t of page.tools) {
      // `$schema` says nothing the model needs, and a draft ajv does not know would fail to compile.
      const { $schema: _, ...parameters } = t.inputSchema as Record<string, unknown>;
      tools.push({
        name: t.name,
        description: t.description ?? t.title ?? t.name,
        parameters,
        execute: (args: Record<string, unknown>, ctx: ToolContext) => callTool(server, t.name, args, ctx),
      });
    }
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

function serverTools(server: Server): Promise<Tool[]> {
  const key = keyOf(server);
  let tools = toolLists.get(key);
  if (!tools) {
    tools = listTools(server);
    toolLists.set(key, tools);
    tools.catch(() => toolLists.delete(key)); // a server that failed to start is tried again next time
  }
  return tools;
}

/**
 * The tools of MCP stdio servers as Clotho {@link Tool}s. Each server is started and listed once per process (equal
 * configs share it) and closed when the process exits. A result with `isError` is a {@link ToolError} the model sees;
 * a dead server or transport failure is a plain Error (the `tool` step retries it), and the next call starts the
 * server again. Tool names must be unique across the servers.
 */
export async function mcpTools(servers: readonly McpServerConfig[]): Promise<Tool[]> {
  const parsed = servers.map((s) => McpServerConfigSchema.parse(s));
  const lists = await Promise.all(parsed.map(serverTools));
  const seen = new Map<string, string>();
  lists.forEach((list, i) => {
    for (const tool of list) {
      const other = seen.get(tool.name);
      if (other !== undefined) throw new Error(`MCP tool "${tool.name}" is served by both "${other}" and "${describe(parsed[i]!)}"`);
      seen.set(tool.name, describe(parsed[i]!));
    }
  });
  return lists.flat();
}

/** Closes every MCP connection this process opened (their servers exit); the next call starts them again. */
export async function closeMcpServers(): Promise<void> {
  const pending = [...connections.values()];
  connections.clear();
  toolLists.clear();
  live.clear();
  await Promise.all(
    pending.map((p) =>
      p.then(
        (c) => c.client.close(),
        () => undefined,
      ),
    ),
  );
}
