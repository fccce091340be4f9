/**
 * A stdio MCP server with one tool whose every real execution appends a line to a ledger file (a side effect outside
 * Clotho that survives the kill of everything around it), for crash tests that count executions:
 *
 *   node --import tsx test/support/mcp-ledger-server.ts --tool NAME --ledger FILE [--honour-keys] [--hang-file FILE]
 *
 * With `--honour-keys` it keeps the idempotency key Clotho sends in `_meta` with each execution, and answers a call
 * whose key it already executed from the ledger, without executing again (as a payment API does with its
 * Idempotency-Key). With `--hang-file`, the execution whose number (1-based, in the ledger) the file holds is carried
 * out and written down, then never answered: the file is replaced by `FILE.hung` holding its key, so a test knows the
 * tool ran and its result cannot have been recorded, and kills the worker in exactly that window.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { MCP_IDEMPOTENCY_KEY } from '../../src/env/mcp.js';

const { values } = parseArgs({
  options: {
    tool: { type: 'string' },
    ledger: { type: 'string' },
    'honour-keys': { type: 'boolean', default: false },
    'hang-file': { type: 'string' },
  },
});
const ledger = values.ledger!;

/** One line of the ledger: an execution, or (with keys honoured) a repeat answered from it. */
export interface LedgerLine {
  kind: 'executed' | 'repeat';
  key: string | null;
  text: string;
  result: string;
  pid: number;
  /** When it was written, ms since the epoch. */
  at: number;
}

const lines = (): LedgerLine[] =>
  existsSync(ledger)
    ? readFileSync(ledger, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as LedgerLine)
    : [];
const write = (line: LedgerLine) => appendFileSync(ledger, `${JSON.stringify(line)}\n`);

const server = new McpServer({ name: 'clotho-ledger', version: '1.0.0' });
server.registerTool(
  values.tool!,
  { description: 'Appends a text to the ledger and answers its entry number', inputSchema: { text: z.string() } },
  async ({ text }, extra) => {
    const key = typeof extra._meta?.[MCP_IDEMPOTENCY_KEY] === 'string' ? (extra._meta[MCP_IDEMPOTENCY_KEY] as string) : null;
    const executed = lines().filter((l) => l.kind === 'executed');
    const earlier = values['honour-keys'] && key !== null ? executed.find((l) => l.key === key) : undefined;
    if (earlier) {
      write({ ...earlier, kind: 'repeat', pid: process.pid, at: Date.now() });
      return { content: [{ type: 'text', text: earlier.result }] };
    }
    const number = executed.length + 1;
    const result = `${values.tool} entry ${number}: ${text}`;
    write({ kind: 'executed', key, text, result, pid: process.pid, at: Date.now() });
    const hang = values['hang-file'];
    if (hang && existsSync(hang) && Number(readFileSync(hang, 'utf8')) === number) {
      // Written whole, then renamed: the test must never read the file half written.
      writeFileSync(`${hang}.hung.tmp`, key ?? '');
      renameSync(`${hang}.hung.tmp`, `${hang}.hung`);
      renameSync(hang, `${hang}.done`);
      return new Promise<never>(() => undefined);
    }
    return { content: [{ type: 'text', text: result }] };
  },
);

await server.connect(new StdioServerTransport());
