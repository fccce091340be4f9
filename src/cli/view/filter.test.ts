import { describe, expect, it } from 'vitest';
import { applyFilter, parseFilter } from './filter.js';
import { summariseGroup, type GroupStatus, type RawGroup } from './model.js';

const group = (
  id: string,
  environment: string,
  status: GroupStatus,
  rollouts: { score: number | null; text: string }[],
  note: string | null = null,
) => {
  const raw: RawGroup = {
    scores: rollouts.map((r) => r.score),
    messages: rollouts.map((r) => [
      { role: 'user', content: 'Q' },
      { role: 'assistant', content: r.text },
    ]),
    tokens: rollouts.map(() => []),
    masks: rollouts.map(() => []),
    logprobs: rollouts.map(() => null),
    overrides: rollouts.map(() => null),
    groupOverrides: null,
    tools: null,
    parsed: null,
  };
  return summariseGroup(raw, { id, label: id, address: { runId: 'r', environment, itemIndex: 0 }, status, note });
};

const groups = [
  group('a', 'math', 'scored', [
    { score: 1, text: 'It is 42' },
    { score: -1, text: 'It is 41' },
  ]),
  group('b', 'math', 'dropped', [
    { score: 0.5, text: 'Banana' },
    { score: 0.5, text: 'banana' },
  ]),
  group('c', 'tools', 'failed', [], 'inference returned 400: context too long'),
  group('d', 'tools', 'unknown', [{ score: null, text: 'still going' }]),
];
const shown = (query: Record<string, string>) =>
  applyFilter(groups, parseFilter(query)).map((g) => `${g.group.id}:${g.rollouts.map((r) => r.sample).join('')}`);

describe("the viewer's filters", () => {
  it('show everything when empty, failed groups without rollouts too', () => {
    expect(shown({})).toEqual(['a:01', 'b:01', 'c:', 'd:0']);
  });

  it('select rollouts by score range, inclusive, leaving out unscored ones and groups left with none', () => {
    expect(shown({ min: '0.5' })).toEqual(['a:0', 'b:01']);
    expect(shown({ min: '-1', max: '0.5' })).toEqual(['a:1', 'b:01']);
    expect(shown({ max: '-2' })).toEqual([]);
  });

  it('select groups by environment and status', () => {
    expect(shown({ env: 'tools' })).toEqual(['c:', 'd:0']);
    expect(shown({ status: 'scored,failed' })).toEqual(['a:01', 'c:']);
  });

  it("find text in rollouts case-insensitively, or in a group's failure note (then the whole group)", () => {
    expect(shown({ q: 'BANANA' })).toEqual(['b:01']);
    expect(shown({ q: '42' })).toEqual(['a:0']);
    expect(shown({ q: 'context too long' })).toEqual(['c:']);
  });

  it('ignore values that mean nothing rather than hiding everything', () => {
    expect(parseFilter({ min: 'x', max: '', status: 'bogus', q: '  ' })).toEqual({});
  });
});
