import { playEpisode, resolveEnvConfig, seededRandom, type GameCommand, type Message } from 'clotho';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import adventure, { adventureGame, HELD, worldOf, type AdventureState } from './adventure.js';
import { adventurePlan } from './solve.js';
import { DIRECTIONS, doorBetween, OPPOSITE, WORLD_LIMITS, type World } from './world.js';

const config = resolveEnvConfig(adventure, []);
const options = fc.record({
  rooms: fc.integer({ min: 2, max: WORLD_LIMITS.rooms }),
  locks: fc.integer({ min: 0, max: WORLD_LIMITS.locks }),
  distractors: fc.integer({ min: 0, max: WORLD_LIMITS.distractors }),
});
const step: Record<string, [number, number]> = { north: [-1, 0], east: [0, 1], south: [1, 0], west: [0, -1] };

/** Each room's grid cell, found by walking the exits from room 0; throws if two walks disagree. */
function cells(world: World): Map<number, string> {
  const at = new Map([[0, '0,0']]);
  const queue = [0];
  for (let room = queue.shift(); room !== undefined; room = queue.shift()) {
    const [r, c] = at.get(room)!.split(',').map(Number) as [number, number];
    for (const [direction, next] of Object.entries(world.rooms[room]!.exits)) {
      const cell = `${r + step[direction]![0]},${c + step[direction]![1]}`;
      if (at.has(next)) expect(at.get(next)).toBe(cell);
      else {
        at.set(next, cell);
        queue.push(next);
      }
    }
  }
  return at;
}

describe('generated worlds', () => {
  it('are the same for the same seed and options, and differ between seeds', () => {
    fc.assert(
      fc.property(fc.nat(), options, (seed, o) => {
        expect(worldOf(seed, o)).toEqual(worldOf(seed, o));
      }),
    );
    const o = { rooms: 6, locks: 2, distractors: 2 };
    expect(new Set(Array.from({ length: 50 }, (_, seed) => JSON.stringify(worldOf(seed, o)))).size).toBe(50);
  });

  it('lay rooms on a grid as a tree with two-way exits, locked doors of distinct colours on its edges, and every item placed', () => {
    fc.assert(
      fc.property(fc.nat(), options, (seed, o) => {
        const world = worldOf(seed, o);
        expect(world.rooms).toHaveLength(o.rooms);
        expect(new Set(world.rooms.map((r) => r.name)).size).toBe(o.rooms);
        let edges = 0;
        world.rooms.forEach((room, a) => {
          for (const d of DIRECTIONS) {
            const b = room.exits[d];
            if (b === undefined) continue;
            expect(world.rooms[b]!.exits[OPPOSITE[d]]).toBe(a);
            edges++;
          }
        });
        expect(edges / 2).toBe(o.rooms - 1);
        const at = cells(world);
        expect(at.size).toBe(o.rooms); // connected: every room was reached
        expect(new Set(at.values()).size).toBe(o.rooms); // no two rooms share a cell
        expect(world.doors).toHaveLength(Math.min(o.locks, o.rooms - 1));
        expect(new Set(world.doors.map((d) => d.colour)).size).toBe(world.doors.length);
        for (const {
          between: [a, b],
          colour,
        } of world.doors) {
          expect(Object.values(world.rooms[a]!.exits)).toContain(b);
          expect(world.items[`${colour} key`]).toBeGreaterThanOrEqual(0);
        }
        expect(Object.keys(world.items)).toHaveLength(world.doors.length + 1 + o.distractors);
        for (const room of Object.values(world.items)) expect(room).toBeLessThan(o.rooms);
        expect(world.items[world.treasure]).not.toBe(world.goal);
        expect(world.start).toBeLessThan(o.rooms);
      }),
    );
  });

  it("can always be won: a breadth-first search over the game's own states reaches the goal", () => {
    fc.assert(
      fc.property(fc.nat(), options, (seed, o) => {
        const plan = adventurePlan(seed, { ...config, ...o });
        expect(plan).not.toBeNull();
        // Played through the rules, the plan ends with the goal and its reward.
        const context = { seed, config: { ...config, ...o }, random: seededRandom(seed) };
        let state: AdventureState = adventureGame.start(context);
        const rewards = plan!.map((command) => {
          const outcome = adventureGame.play(structuredClone(state), command, context);
          state = outcome.state;
          return outcome.reward;
        });
        expect(rewards).toEqual([...plan!.slice(1).map(() => -1), 20]);
        expect(state.won).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

const items = await adventure.load(config);
const text = (c: GameCommand) => `${c.name} ${Object.values(c.arguments).join(' ')}`.trim();
const call = (c: GameCommand, id: string): Message => ({
  role: 'assistant',
  content: '',
  tool_calls: [{ id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }],
});

describe('adventure episodes', () => {
  it('plays the shortest plan for +20 − (steps − 1), as text or tool calls, and penalises an unreadable reply', async () => {
    const item = items.get(0);
    const plan = adventurePlan(item.seed, config)!;
    const byText = await playEpisode(adventure, { item, replies: plan.map(text) });
    expect(byText.score).toBe(21 - plan.length);
    expect(byText.metrics).toMatchObject({ steps: plan.length, invalid_actions: 0, finished: 1, won: 1 });
    const byTools = await playEpisode(adventure, { item, replies: ['I am not sure.', ...plan.map((c, i) => call(c, `c${i}`))] });
    expect(byTools.score).toBe(21 - plan.length - 10);
    expect(byTools.metrics).toMatchObject({ steps: plan.length + 1, invalid_actions: 1, won: 1 });
    expect(byTools.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: `c${plan.length - 1}`, name: 'drop' });
    expect(String(byTools.messages.at(-1)!.content)).toMatch(
      /You have completed your goal!\nReward \+20, total [+-]?\d+\.\n\nThe game is over\.$/,
    );
  });

  it('answers each command by the world: exits, locks, keys, items, shortcuts; every action costs −1', () => {
    // The first world with a locked door out of the starting room.
    let index = 0;
    const worldAt = (i: number) => worldOf(items.get(i).seed, config);
    const lockedOut = (w: World) =>
      DIRECTIONS.find((d) => w.rooms[w.start]!.exits[d] !== undefined && doorBetween(w, w.start, w.rooms[w.start]!.exits[d]!) >= 0);
    while (!lockedOut(worldAt(index))) index++;
    const world = worldAt(index);
    const seed = items.get(index).seed;
    const direction = lockedOut(world)!;
    const door = world.doors[doorBetween(world, world.start, world.rooms[world.start]!.exits[direction]!)]!;
    const context = { seed, config, random: seededRandom(seed) };
    let state = adventureGame.start(context);
    const act = (line: string) => {
      const command = adventureGame.parseText!(line, config);
      if ('problem' in command) return { problem: command.problem };
      const outcome = adventureGame.play(structuredClone(state), command, context);
      state = outcome.state;
      return outcome;
    };
    const missing = DIRECTIONS.find((d) => world.rooms[world.start]!.exits[d] === undefined)!;
    expect(act(missing[0]!)).toMatchObject({ reward: -1, message: `There is no exit ${missing}.` });
    expect(act(`go ${direction}`)).toMatchObject({ reward: -1, message: `The ${door.colour} door to the ${direction} is locked.` });
    expect(act(`unlock ${direction}`)).toMatchObject({ reward: -1, message: `You need the ${door.colour} key to unlock this door.` });
    expect(act('take unicorn')).toMatchObject({ reward: -1, message: 'There is no unicorn here.' });
    expect(act('drop unicorn')).toMatchObject({ reward: -1, message: 'You do not carry any unicorn.' });
    // Give the player the key, as if fetched: then the door unlocks and opens.
    state.items[`${door.colour} key`] = HELD;
    expect(act('i')).toMatchObject({ reward: -1, message: `You carry: a ${door.colour} key.` });
    expect(act(`open ${direction}`)).toMatchObject({
      reward: -1,
      message: `You unlock the ${door.colour} door with the ${door.colour} key.`,
    });
    expect(act(`unlock ${direction}`)).toMatchObject({ message: `The door to the ${direction} is already unlocked.` });
    const beyond = world.rooms[world.start]!.exits[direction]!;
    expect(act(direction)).toMatchObject({ reward: -1, message: `You go ${direction} to the ${world.rooms[beyond]!.name}.` });
    expect(state.room).toBe(beyond);
    expect(act('drop key')).toMatchObject({ reward: -1, message: `You drop the ${door.colour} key.` });
    // With the other key here too, "key" alone is ambiguous.
    const other = Object.keys(state.items).find((item) => item.endsWith(' key') && item !== `${door.colour} key`)!;
    state.items[other] = state.room;
    expect(act('take key')).toMatchObject({ reward: -1, message: expect.stringMatching(/^Which one: the \w+ key or the \w+ key\?$/) });
    expect(act(`pick up the ${door.colour} key`)).toMatchObject({ reward: -1, message: `You take the ${door.colour} key.` });
    expect(act(`take ${door.colour} key`)).toMatchObject({ message: 'You already carry that.' });
    expect(act('take the unicorn')).toMatchObject({ message: 'There is no unicorn here.' });
    expect(act('look')).toMatchObject({ reward: -1, done: false });
    expect(act('go up')).toMatchObject({ problem: expect.stringContaining('invalid arguments for go: direction') });
    expect(act('dance')).toMatchObject({ problem: expect.stringContaining('"dance" is not an action') });
    const seen = adventureGame.observe(state, context);
    expect(seen).toContain(`You are in the ${world.rooms[beyond]!.name}. Exits: `);
    expect(seen).toContain(`${OPPOSITE[direction]} to the ${world.rooms[world.start]!.name}`);
    expect(seen).toContain(`You carry: a ${door.colour} key.`);
    expect(seen).toContain(`Goal: put the ${world.treasure} down in the ${world.rooms[world.goal]!.name}.`);
  });

  it('ends unfinished at --env.max_steps', async () => {
    const episode = await playEpisode(adventure, { item: items.get(3), replies: ['look'], argv: ['--env.max_steps', '4'] });
    expect(episode).toMatchObject({ score: -4, turns: 4, metrics: { finished: 0, timed_out: 1, won: 0 } });
    expect(config).toMatchObject({
      rooms: 6,
      locks: 2,
      distractors: 2,
      max_steps: 50,
      max_turns: 51,
      goal_reward: 20,
      invalid_reward: -10,
    });
  });
});
