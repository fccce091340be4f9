/**
 * The tools of the tool_use environment: a calculator, a key-value store kept in the trajectory's state slot, and
 * search and lookup over the task's corpus. Each call is its own durable activity in Clotho; the store's changes are
 * stored with the trajectory, so a resumed episode sees exactly the store it left.
 */
import { defineTool, ToolError, z, type Tool, type ToolContext } from 'clotho';
import { evaluate, formatNumber } from './calculator.js';
import { bm25Index } from './search.js';
import type { Passage } from './tasks.js';

/** The trajectory's state slot: the key-value store. JSON-safe, as Clotho stores it durably. */
export interface ToolUseState {
  kv: Record<string, number | string>;
}

// Bounds that keep the state slot small: it is stored with every turn.
const MAX_KEYS = 200;
const MAX_VALUE_LENGTH = 1000;

export const calculator = defineTool({
  name: 'calculator',
  description: 'Evaluates an arithmetic expression with + - * / % ^ and parentheses, e.g. "(12,400 + 3,100) * 3".',
  parameters: z.object({ expression: z.string().min(1).max(500).describe('the expression to evaluate') }),
  execute: ({ expression }) => formatNumber(evaluate(expression)),
});

/** The store in the state slot, created on first use when the episode started without one. */
function store(ctx: ToolContext<unknown, Partial<ToolUseState> | null>): Record<string, number | string> {
  ctx.state ??= {};
  return (ctx.state.kv ??= {});
}

const Key = z.string().min(1).max(100).describe('the key, e.g. "sales/brask/mar"');

export const kvGet = defineTool({
  name: 'kv_get',
  description: 'Reads the value stored under a key in the key-value store.',
  parameters: z.object({ key: Key }),
  execute({ key }, ctx) {
    const kv = store(ctx);
    if (!Object.hasOwn(kv, key)) throw new ToolError(`no key "${key}"; kv_list shows the keys`);
    return String(kv[key]);
  },
});

export const kvSet = defineTool({
  name: 'kv_set',
  description: 'Stores a value (a number or a text) under a key in the key-value store, replacing any value there.',
  parameters: z.object({ key: Key, value: z.union([z.number(), z.string().max(MAX_VALUE_LENGTH)]) }),
  execute({ key, value }, ctx) {
    const kv = store(ctx);
    if (!Object.hasOwn(kv, key) && Object.keys(kv).length >= MAX_KEYS) throw new ToolError(`the store is full (${MAX_KEYS} keys)`);
    // defineProperty, so that a key such as "__proto__" is an ordinary entry rather than the object's prototype.
    Object.defineProperty(kv, key, { value, enumerable: true, writable: true, configurable: true });
    return `stored ${key}`;
  },
});

export const kvList = defineTool({
  name: 'kv_list',
  description: 'Lists the keys in the key-value store (not their values), optionally only those starting with a prefix.',
  parameters: z.object({ prefix: z.string().max(100).optional().describe('only keys starting with this') }),
  execute({ prefix }, ctx) {
    const keys = Object.keys(store(ctx))
      .filter((k) => k.startsWith(prefix ?? ''))
      .sort();
    return keys.length > 0 ? keys.join('\n') : prefix ? `no keys start with "${prefix}"` : 'the store is empty';
  },
});

/** search and lookup over a corpus of passages (BM25 ranking; exact, case-insensitive titles). */
export function corpusTools(passages: readonly Passage[]): Tool[] {
  const index = bm25Index(passages);
  const search = defineTool({
    name: 'search',
    description: 'Searches the document collection and returns the best-matching passages with their titles.',
    parameters: z.object({
      query: z.string().min(1).max(300).describe('words to look for'),
      k: z.number().int().min(1).max(10).optional().describe('how many passages (default 3)'),
    }),
    execute({ query, k }) {
      const hits = index.rank(query).slice(0, k ?? 3);
      if (hits.length === 0) throw new ToolError(`no passage matches "${query}"`);
      return hits.map((h, i) => `${i + 1}. ${h.passage.title}: ${h.passage.text}`).join('\n');
    },
  });
  const byTitle = new Map(passages.map((p) => [normalTitle(p.title), p]));
  const lookup = defineTool({
    name: 'lookup',
    description: 'Returns the passage with exactly this title (case does not matter).',
    parameters: z.object({ title: z.string().min(1).max(200) }),
    execute({ title }) {
      const passage = byTitle.get(normalTitle(title));
      if (passage) return passage.text;
      const near = index
        .rank(title)
        .slice(0, 3)
        .map((h) => `"${h.passage.title}"`);
      throw new ToolError(`no passage titled "${title}"${near.length > 0 ? `; close titles: ${near.join(', ')}` : ''}`);
    },
  });
  return [search, lookup];
}

const normalTitle = (title: string): string =>
  title
    .trim()
    .toLowerCase()
    .replace(/^the\s+/, '')
    .replace(/\s+/g, ' ');

/** The tools every task offers, before MCP tools: calculator, the store, and the task's corpus. */
export function taskTools(passages: readonly Passage[]): Tool[] {
  return [calculator, kvGet, kvSet, kvList, ...corpusTools(passages)];
}
