import { createHash } from 'node:crypto';
import { playEpisode, resolveEnvConfig, seededRandom, type Message } from 'clotho';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { taxiPlan } from './solve.js';
import taxi, { describeTaxi, taxiGame } from './taxi.js';
import { decode, encode, IN_TAXI, LANDMARKS, START_STATES, TAXI_ACTIONS, transition, type TaxiPosition } from './taxi-rules.js';

const position = fc.record({
  row: fc.integer({ min: 0, max: 4 }),
  col: fc.integer({ min: 0, max: 4 }),
  passenger: fc.integer({ min: 0, max: 4 }),
  destination: fc.integer({ min: 0, max: 3 }),
});
const action = fc.constantFrom(...TAXI_ACTIONS);

/** East–west walls of Taxi-v3's map, written out by hand: (row, the column west of the wall). */
const WALLS = new Set(['0,1', '1,1', '3,0', '4,0', '3,2', '4,2']);

describe('taxi rules (Gymnasium Taxi-v3)', () => {
  it('numbers the 500 states as Gymnasium does, and starts from its 300', () => {
    const all = Array.from({ length: 500 }, (_, s) => s);
    expect(all.map((s) => encode(decode(s)))).toEqual(all);
    expect(encode({ row: 3, col: 1, passenger: 2, destination: 0 })).toBe(328); // Gymnasium's documented example state
    expect(START_STATES).toHaveLength(300);
    for (const s of START_STATES) expect(decode(s).passenger).not.toBe(decode(s).destination);
  });

  it("matches Gymnasium 1.4's transition table for all 500 states × 6 actions (its SHA-256, taken from the real env.P)", () => {
    // Computed once from `gym.make('Taxi-v3').unwrapped.P` (registered as Taxi-v4 in Gymnasium 1.4, same dry
    // transitions): "next,reward,done" for each state and action in order, joined by ";".
    const table = Array.from({ length: 500 }, (_, s) =>
      TAXI_ACTIONS.map((a) => {
        const { position: p, reward, done } = transition(decode(s), a);
        return `${encode(p)},${reward},${done ? 1 : 0}`;
      }),
    )
      .flat()
      .join(';');
    expect(createHash('sha256').update(table).digest('hex')).toBe('f7aefceeb34c96e07ac286d10c344016501a9accf586ab21e6947810505eccd5');
    // Gymnasium's published P[328]: south 428, north 228, east 348, west blocked, pickup and dropoff illegal.
    expect(TAXI_ACTIONS.map((a) => transition(decode(328), a)).map((t) => [encode(t.position), t.reward, t.done])).toEqual([
      [428, -1, false],
      [228, -1, false],
      [348, -1, false],
      [328, -1, false],
      [328, -10, false],
      [328, -10, false],
    ]);
  });

  it('moves within the grid and stops at walls: every move costs −1 and only the taxi moves', () => {
    fc.assert(
      fc.property(position, fc.constantFrom('south', 'north', 'east', 'west' as const), (from, move) => {
        const { position: to, reward, done } = transition(from, move);
        expect([reward, done, to.passenger, to.destination]).toEqual([-1, false, from.passenger, from.destination]);
        const dr = { south: 1, north: -1, east: 0, west: 0 }[move];
        const dc = { south: 0, north: 0, east: 1, west: -1 }[move];
        const [row, col] = [from.row + dr, from.col + dc];
        const westOf = dc === 1 ? from.col : col;
        const blocked = row < 0 || row > 4 || col < 0 || col > 4 || (dc !== 0 && WALLS.has(`${from.row},${westOf}`));
        expect([to.row, to.col]).toEqual(blocked ? [from.row, from.col] : [row, col]);
      }),
      { numRuns: 1000 },
    );
  });

  it('picks up only where the passenger waits and delivers only at the destination (+20, the end); else −10', () => {
    fc.assert(
      fc.property(position, (from) => {
        const at = LANDMARKS.findIndex(([r, c]) => r === from.row && c === from.col);
        const pickup = transition(from, 'pickup');
        if (from.passenger < IN_TAXI && at === from.passenger)
          expect(pickup).toEqual({ position: { ...from, passenger: IN_TAXI }, reward: -1, done: false });
        else expect(pickup).toEqual({ position: from, reward: -10, done: false });
        const dropoff = transition(from, 'dropoff');
        if (from.passenger === IN_TAXI && at === from.destination)
          expect(dropoff).toEqual({ position: { ...from, passenger: at }, reward: 20, done: true });
        else if (from.passenger === IN_TAXI && at >= 0)
          expect(dropoff).toEqual({ position: { ...from, passenger: at }, reward: -1, done: false });
        else expect(dropoff).toEqual({ position: from, reward: -10, done: false });
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps the books over any sequence of actions: rewards in {−1, −10, +20}, the episode ends only by a delivery', () => {
    fc.assert(
      fc.property(fc.constantFrom(...START_STATES), fc.array(action, { maxLength: 60 }), (start, actions) => {
        let state: TaxiPosition = decode(start);
        let total = 0;
        for (const a of actions) {
          const t = transition(state, a);
          expect([-1, -10, 20]).toContain(t.reward);
          expect(t.done).toBe(t.reward === 20);
          total += t.reward;
          state = t.position;
          if (t.done) {
            expect(state.passenger).toBe(state.destination);
            break;
          }
        }
        expect(Number.isInteger(total)).toBe(true);
      }),
    );
  });

  it('delivers from every start by the BFS plan, with return 20 − (steps − 1); optimal play averages 7.93', () => {
    let sum = 0;
    for (const start of START_STATES) {
      const plan = taxiPlan(decode(start));
      let state = decode(start);
      const rewards = plan.map((a) => {
        const t = transition(state, a);
        state = t.position;
        return t.reward;
      });
      expect(rewards.at(-1)).toBe(20);
      expect(rewards.slice(0, -1).every((r) => r === -1)).toBe(true);
      sum += rewards.reduce((a, b) => a + b, 0);
    }
    // Gymnasium registers Taxi with reward_threshold 8 ("optimum = 8.46"); exact optimal play from its uniform start
    // distribution earns 2379 / 300 on average.
    expect(sum).toBe(2379);
  });
});

const config = resolveEnvConfig(taxi, []);
const items = await taxi.load(config);
const startOf = (i: number) => taxiGame.start({ seed: items.get(i).seed, config, random: seededRandom(items.get(i).seed) });
const call = (name: string, id: string): Message => ({
  role: 'assistant',
  content: '',
  tool_calls: [{ id, type: 'function', function: { name, arguments: '{}' } }],
});

describe('taxi episodes', () => {
  it('starts each item from its seed, uniformly over the 300 start states', () => {
    const starts = Array.from({ length: 3000 }, (_, i) => encode(startOf(i)));
    expect(new Set(starts).size).toBe(300);
    for (const s of starts.slice(0, 50)) expect(START_STATES).toContain(s);
    expect(startOf(7)).toEqual(startOf(7));
    expect(taxi.prompt(items.get(7), config)[1]!.content).toBe(describeTaxi(startOf(7)));
  });

  it('plays the optimal plan as text (aliases, Gymnasium ids) and as tool calls, scoring the return', async () => {
    const plan = taxiPlan(startOf(0));
    const asText = plan.map((a, i) =>
      i % 3 === 0 ? String(TAXI_ACTIONS.indexOf(a)) : i % 3 === 1 ? `I will go ${a}.\nmove ${a}` : `<action>${a}</action>`,
    );
    const text = await playEpisode(taxi, { item: items.get(0), replies: asText });
    expect(text.score).toBe(21 - plan.length);
    expect(text.metrics).toEqual({ steps: plan.length, invalid_actions: 0, finished: 1, timed_out: 0, delivered: 1, picked_up: 1 });
    expect(text.messages.at(-1)!.content).toBe(
      `You drop the passenger off at the destination.\nReward +20, total +${21 - plan.length}.\n\nThe game is over.`,
    );

    const tools = await playEpisode(taxi, { item: items.get(0), replies: ['dance', ...plan.map((a, i) => call(a, `c${i}`))] });
    expect(tools.score).toBe(21 - plan.length - 10);
    expect(tools.metrics).toMatchObject({ steps: plan.length + 1, invalid_actions: 1, delivered: 1 });
    expect(tools.messages[3]!.content).toMatch(
      /^No action: "dance" is not an action \(actions: south, north, east, west, pickup, dropoff\)\. The taxi stays\.\nReward -10, total -10\./,
    );
    expect(tools.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(plan.map((_, i) => `c${i}`));
  });

  it('charges −10 for an illegal pickup and dropoff, and −1 for a wall', async () => {
    // The first item whose taxi starts off the landmarks: neither a pickup nor a dropoff is allowed there.
    let i = 0;
    while (LANDMARKS.some(([r, c]) => r === startOf(i).row && c === startOf(i).col)) i++;
    const episode = await playEpisode(taxi, { item: items.get(i), replies: ['pickup', 'drop off'], maxTurns: 3 });
    expect(
      episode.messages
        .filter((m) => m.role === 'user')
        .slice(1)
        .map((m) => String(m.content).split('\n').slice(0, 2).join(' ')),
    ).toEqual(['There is no passenger here to pick up. Reward -10, total -10.', 'You cannot drop off here. Reward -10, total -20.']);
  });

  it('ends at the step limit as timed out, the return counted', async () => {
    const episode = await playEpisode(taxi, { item: items.get(1), replies: ['north', 'south'], argv: ['--env.max_steps', '6'] });
    expect(episode).toMatchObject({ score: -6, turns: 6, metrics: { steps: 6, finished: 0, timed_out: 1, delivered: 0 } });
    expect(episode.messages.at(-1)!.content).toMatch(/The game is over: it ends after 6 steps\.$/);
    expect(config).toMatchObject({ max_steps: 200, max_turns: 201, invalid_reward: -10 });
  });
});
