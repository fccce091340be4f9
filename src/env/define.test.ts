import { describe, expect, expectTypeOf, it } from 'vitest';
import { defineEnvironment, fromItems } from './define.js';
import { playEpisode } from './testing.js';

// An interface, as most state types are written: JsonSafe reads it by its members, not by an index signature.
interface Counter {
  count: number;
  seen: string[];
  last?: string;
}

const base = {
  description: 'counts',
  config: {},
  load: async () => fromItems([{ word: 'a' }]),
  prompt: () => [],
  parse: (completion: string) => completion,
};

describe("an environment's state type", () => {
  it('is what initialState returns, in every hook that reads the state slot', async () => {
    const counting = defineEnvironment({
      ...base,
      name: 'counting',
      initialState: (item): Counter => ({ count: 0, seen: [item.word] }),
      step({ state }) {
        expectTypeOf(state).toEqualTypeOf<Counter>();
        return { messages: [], done: true, state: { ...state, count: state.count + 1 } };
      },
      score: ({ state }) => state.count + state.seen.length,
    });
    expectTypeOf(counting.initialState!).returns.toEqualTypeOf<Counter>();
    // One step counted one turn; the state the score read is the one the step returned.
    expect((await playEpisode(counting, { item: { word: 'b' }, replies: ['x'], maxTurns: 2 })).score).toBe(2);
  });

  it('is null without initialState', () => {
    defineEnvironment({
      ...base,
      name: 'stateless',
      score({ state }) {
        expectTypeOf(state).toBeNull();
        return 0;
      },
    });
  });

  it('refuses a state that JSON would change: a Date, a Map, a function', () => {
    defineEnvironment({
      ...base,
      name: 'dated',
      // @ts-expect-error a Date comes back from the store as a string
      initialState: () => ({ since: new Date(0) }),
      score: () => 0,
    });
    defineEnvironment({
      ...base,
      name: 'mapped',
      // @ts-expect-error a Map comes back as {}
      initialState: () => ({ counts: new Map<string, number>() }),
      score: () => 0,
    });
    defineEnvironment({
      ...base,
      name: 'callback',
      // @ts-expect-error a function does not survive at all
      initialState: () => ({ onDone: () => undefined }),
      score: () => 0,
    });
  });
});
