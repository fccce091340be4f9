import { executeToolCall, ToolError, type ToolContext } from 'clotho';
import { describe, expect, it } from 'vitest';
import { evaluate, formatNumber } from './calculator.js';
import { bm25Index } from './search.js';
import type { Passage } from './tasks.js';
import { calculator, corpusTools, kvGet, kvList, kvSet, taskTools } from './tools.js';

const context = (state: unknown = null): ToolContext => ({
  item: null,
  state,
  group: null,
  sample: 0,
  turn: 0,
  call: 0,
  idempotencyKey: 'k',
  signal: new AbortController().signal,
  heartbeat: () => undefined,
});
const calc = (expression: string) => executeToolCall([calculator], { id: 'c', name: 'calculator', arguments: { expression } }, context());

describe('calculator', () => {
  it('follows precedence, associativity and signs', () => {
    expect(evaluate('1 + 2 * 3')).toBe(7);
    expect(evaluate('(1 + 2) * 3')).toBe(9);
    expect(evaluate('10 - 4 - 3')).toBe(3);
    expect(evaluate('2 ^ 3 ^ 2')).toBe(512);
    expect(evaluate('-2 ^ 2')).toBe(-4);
    expect(evaluate('2 ^ -1')).toBe(0.5);
    expect(evaluate('--3 + +2')).toBe(5);
    expect(evaluate('17 % 5 * 2')).toBe(4);
    expect(evaluate('7 / 2')).toBe(3.5);
    expect(evaluate('.5 + 1.25')).toBe(1.75);
    expect(evaluate('(12,400 + 3,100) * 3')).toBe(46500);
    expect(evaluate('3 × 4 ÷ 2 − 1 + 2**3')).toBe(13);
    expect(formatNumber(evaluate('0.1 + 0.2'))).toBe('0.3');
    expect(formatNumber(evaluate('-0 * 5'))).toBe('0');
  });

  it('answers through the tool as text', async () => {
    expect(await calc('(41,200 + 18,300) * 2')).toEqual({ outcome: 'ok', content: '119000' });
  });

  it('reports bad expressions as tool errors the model reads', async () => {
    for (const [expression, message] of [
      ['1 / 0', 'division by zero'],
      ['5 % (2 - 2)', 'modulo by zero'],
      ['2 +', 'unexpected end of expression'],
      ['(1 + 2', 'missing ")"'],
      ['1 2', 'unexpected "2" at position 3'],
      ['2 * x', 'unexpected "x" at position 5'],
      ['1,2 + 3', 'unexpected ","'],
      ['   ', 'empty expression'],
      ['10 ^ 400', 'not a finite number'],
      ['(-8) ^ 0.5', 'not a finite number'],
      ['('.repeat(150) + '1' + ')'.repeat(150), 'nested deeper'],
    ] as const) {
      expect(() => evaluate(expression)).toThrow(ToolError);
      const result = await calc(expression);
      expect(result.outcome).toBe('tool_error');
      expect(result.content).toContain(message);
    }
    expect((await calc('')).outcome).toBe('invalid_arguments');
  });
});

describe('key-value store', () => {
  it('keeps its entries in the state slot, changing with each call', async () => {
    const tools = [kvGet, kvSet, kvList];
    const ctx = context(); // an episode that started without a store
    const call = (name: string, args: Record<string, unknown>) => executeToolCall(tools, { id: 'c', name, arguments: args }, ctx);
    expect(await call('kv_list', {})).toEqual({ outcome: 'ok', content: 'the store is empty' });
    expect(await call('kv_set', { key: 'a', value: 12 })).toEqual({ outcome: 'ok', content: 'stored a' });
    expect(ctx.state).toEqual({ kv: { a: 12 } });
    await call('kv_set', { key: 'b/town', value: 'Varnholt' });
    await call('kv_set', { key: 'a', value: 30 });
    expect(ctx.state).toEqual({ kv: { a: 30, 'b/town': 'Varnholt' } });
    expect(await call('kv_get', { key: 'a' })).toEqual({ outcome: 'ok', content: '30' });
    expect(await call('kv_list', { prefix: 'b/' })).toEqual({ outcome: 'ok', content: 'b/town' });
    expect(await call('kv_get', { key: 'missing' })).toMatchObject({
      outcome: 'tool_error',
      content: expect.stringContaining('no key "missing"'),
    });
    expect(await call('kv_set', { key: 'x', value: { nested: 1 } })).toMatchObject({ outcome: 'invalid_arguments' });
    // The state survives the durable store's JSON round trip unchanged, even a key named like a prototype.
    await call('kv_set', { key: '__proto__', value: 1 });
    expect(JSON.parse(JSON.stringify(ctx.state))).toEqual(ctx.state);
    expect(Object.keys(ctx.state.kv)).toContain('__proto__');
  });

  it('reads a preloaded store and keeps the rest of the state', async () => {
    const ctx = context({ kv: { 'sales/x/jan': 5 }, other: true });
    expect(await kvGet.execute({ key: 'sales/x/jan' }, ctx)).toBe('5');
    await kvSet.execute({ key: 'n', value: 1 }, ctx);
    expect(ctx.state).toEqual({ kv: { 'sales/x/jan': 5, n: 1 }, other: true });
  });
});

const CORPUS: Passage[] = [
  { title: 'Province of Ekest', text: 'The province of Ekest has 2 towns: Varnholt and Quill. Its capital is Varnholt.' },
  {
    title: 'Varnholt',
    text: 'Varnholt is a town in the province of Ekest. It has a population of 12,400 and lies at an elevation of 340 metres.',
  },
  {
    title: 'Quill',
    text: 'Quill is a town in the province of Ekest. It was founded in 1420 by settlers from Brask. It has a population of 3,100.',
  },
  {
    title: 'Brask',
    text: 'Brask is a town in the province of Osmer. It has a population of 41,000 and lies at an elevation of 12 metres.',
  },
  { title: 'Province of Osmer', text: 'The province of Osmer has one town: Brask. It is known for its wool.' },
];

describe('search and lookup', () => {
  const [search, lookup] = corpusTools(CORPUS);
  const ctx = context();

  it('ranks the passage that answers the query first', () => {
    const rank = (q: string) =>
      bm25Index(CORPUS)
        .rank(q)
        .map((r) => r.passage.title);
    expect(rank('population of Varnholt')[0]).toBe('Varnholt');
    expect(rank('towns in the province of Osmer')[0]).toBe('Province of Osmer');
    expect(rank('who settled Quill')[0]).toBe('Quill');
    expect(rank('which town has 41,000 people')[0]).toBe('Brask');
    expect(rank('the of and')).toEqual([]);
  });

  it('returns the top k passages with titles, and an error when nothing matches', async () => {
    const text = String(await search!.execute({ query: 'Ekest towns', k: 2 }, ctx));
    expect(text.split('\n')).toHaveLength(2);
    expect(text).toMatch(/^1\. Province of Ekest: The province of Ekest has 2 towns/);
    await expect(async () => search!.execute({ query: 'zeppelin' }, ctx)).rejects.toThrow(ToolError);
  });

  it('looks up a title regardless of case, suggesting close titles when there is none', async () => {
    expect(await lookup!.execute({ title: ' province of EKEST ' }, ctx)).toBe(CORPUS[0]!.text);
    await expect(async () => lookup!.execute({ title: 'Brask town' }, ctx)).rejects.toThrow('close titles: "Brask"');
  });

  it('offers calculator, store and corpus tools with distinct names', () => {
    expect(taskTools(CORPUS).map((t) => t.name)).toEqual(['calculator', 'kv_get', 'kv_set', 'kv_list', 'search', 'lookup']);
  });
});
