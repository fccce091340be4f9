import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { wrapped } from '../../env/loaded.js';
import { hashSeed, seededRandom } from '../../env/random.js';
import { playEpisode, resolveEnvConfig } from '../../env/testing.js';
import type { Message } from '../../schema/scored-data.js';
import { defineGame, type Game, type GameSlot } from './game.js';
import { actionTools, commandFromCall, parseCommand, readMove, type GameAction } from './moves.js';

const ACTIONS: GameAction[] = [
  {
    name: 'guess',
    description: 'Guess the number.',
    parameters: z.object({ number: z.coerce.number().int().min(0).max(9) }),
    example: 'guess 3',
  },
  { name: 'reroll', description: 'Draw a new number.', aliases: ['roll again', 'r'] },
  { name: 'pick up', description: 'A two-word verb.', aliases: ['pick'] },
];

describe('reading a move', () => {
  const call = (name: string, args: string, id = 'c1') => ({ id, type: 'function', function: { name, arguments: args } });

  it('takes the first tool call, OpenAI or Hermes, and keeps the rest as extra', () => {
    expect(readMove({ content: 'ok', tool_calls: [call('guess', '{"number": 4}'), call('reroll', '{}', 'c2')] })).toEqual({
      kind: 'call',
      call: { id: 'c1', name: 'guess', arguments: { number: 4 } },
      extra: [{ id: 'c2', name: 'reroll', arguments: {} }],
    });
    expect(readMove({ content: 'Let me see.\n<tool_call>{"name": "reroll", "arguments": {}}</tool_call>' }, 'turn-3')).toEqual({
      kind: 'call',
      call: { id: 'turn-3-0', name: 'reroll', arguments: {} },
      extra: [],
    });
    expect(readMove({ content: '<tool_call>{"name": "guess", "arguments": {</tool_call>' })).toMatchObject({
      kind: 'none',
      problem: expect.stringContaining('did not parse'),
    });
  });

  it('reads a text command after any reasoning: an <action> tag, else the last line, without decoration', () => {
    const text = (content: string) => readMove({ content });
    expect(text('I think high.\n\n**Guess 7**.')).toEqual({ kind: 'text', text: 'guess 7' });
    expect(text('<think>maybe guess 2\nor 3</think>\nAction: `reroll`')).toEqual({ kind: 'text', text: 'reroll' });
    expect(text('I will <action>Guess 5</action> now.\nThat is my move.')).toEqual({ kind: 'text', text: 'guess 5' });
    expect(text('"hit!"')).toEqual({ kind: 'text', text: 'hit' });
    expect(text('<think>still thinking')).toEqual({ kind: 'none', problem: 'the reply ended inside <think>' });
    expect(text('  \n ')).toEqual({ kind: 'none', problem: 'the reply holds no action' });
    expect(readMove({ content: null })).toMatchObject({ kind: 'none' });
  });

  it('parses a command: the longest verb or alias, the rest as the first field, checked', () => {
    expect(parseCommand('guess 4', ACTIONS)).toEqual({ name: 'guess', arguments: { number: 4 } });
    expect(parseCommand('Roll again', ACTIONS)).toEqual({ name: 'reroll', arguments: {} });
    expect(parseCommand('pick up', ACTIONS)).toEqual({ name: 'pick up', arguments: {} });
    expect(parseCommand('pick', ACTIONS)).toEqual({ name: 'pick up', arguments: {} });
    expect(parseCommand('guess 12', ACTIONS)).toMatchObject({ problem: expect.stringMatching(/^invalid arguments for guess: number: /) });
    expect(parseCommand('guess', ACTIONS)).toMatchObject({ problem: expect.stringContaining('invalid arguments for guess') });
    expect(parseCommand('reroll twice', ACTIONS)).toEqual({ problem: 'reroll takes no argument, got "twice"' });
    expect(parseCommand('guessing 4', ACTIONS)).toEqual({ problem: '"guessing 4" is not an action (actions: guess, reroll, pick up)' });
  });

  it('checks a tool call against the action it names', () => {
    expect(commandFromCall({ name: 'guess', arguments: { number: '3' } }, ACTIONS)).toEqual({ name: 'guess', arguments: { number: 3 } });
    expect(commandFromCall({ name: 'reroll', arguments: { ignored: true } }, ACTIONS)).toEqual({ name: 'reroll', arguments: {} });
    expect(commandFromCall({ name: 'guess', arguments: {} }, ACTIONS)).toMatchObject({
      problem: expect.stringContaining('invalid arguments for guess'),
    });
    expect(commandFromCall({ name: 'cheat', arguments: {} }, ACTIONS)).toEqual({
      problem: 'unknown action "cheat" (actions: guess, reroll, pick up)',
    });
  });

  it('offers the actions as OpenAI tool definitions', () => {
    const [guess, reroll] = actionTools(ACTIONS) as { type: string; function: { name: string; parameters: Record<string, unknown> } }[];
    expect(guess).toMatchObject({ type: 'function', function: { name: 'guess', description: 'Guess the number.' } });
    expect(guess!.function.parameters).toMatchObject({
      type: 'object',
      properties: { number: { type: 'integer', minimum: 0, maximum: 9 } },
      required: ['number'],
    });
    expect(reroll!.function.parameters).toMatchObject({ type: 'object', properties: {} });
  });
});

/** A toy game: guess a number 0–9 (+5 and the end when right, −1 otherwise); `reroll` draws a new one mid-game. */
interface Guessing {
  target: number;
  rerolls: number;
}
const rules: Game<Guessing, { invalid_reward: z.ZodDefault<z.ZodNumber> }> = {
  name: 'guessing',
  description: 'guess a number',
  config: { invalid_reward: z.number().default(-2) },
  defaults: { max_turns: 10 },
  actions: ACTIONS,
  rules: () => 'Guess my number.',
  start: ({ random }) => ({ target: random.int(10), rerolls: 0 }),
  observe: (state) => `Rerolls so far: ${state.rerolls}.`,
  play(state, command, { random }) {
    if (command.name === 'reroll')
      return { state: { target: random.int(10), rerolls: state.rerolls + 1 }, reward: 0, done: false, message: 'Rerolled.' };
    const guess = command.arguments.number as number;
    if (guess === state.target) return { state, reward: 5, done: true, message: 'Right!' };
    return { state, reward: -1, done: false, message: guess < state.target ? 'Higher.' : 'Lower.' };
  },
  unreadable: (state, problem, { config }) => ({ state, reward: config.invalid_reward, done: false, message: `No action: ${problem}.` }),
  maxSteps: () => 5,
  metrics: (state) => ({ rerolls: state.rerolls }),
};
const guessing = defineGame(rules);

const config = resolveEnvConfig(guessing, []);
// Through the runtime's wrapping, as a run reads items.
const itemAt = async (i: number, argv: string[] = []) => wrapped(await guessing.load(resolveEnvConfig(guessing, argv))).get(i);

const targetOf = (item: { seed: number }) => seededRandom(item.seed).int(10);
const say = (content: string): Message => ({ role: 'assistant', content });
const toolCall = (name: string, args: Record<string, unknown>, id: string): Message => ({
  role: 'assistant',
  content: '',
  tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
});

describe('defineGame', () => {
  it("adds the loop's config, derives each item's seed, and prompts with the rules, actions and first observation", async () => {
    expect(config).toMatchObject({ seed: 0, size: 1_000_000, offer_tools: true, invalid_reward: -2, max_turns: 10 });
    // A game that sets no max_turns gets many turns, not Clotho's single-turn default.
    expect(resolveEnvConfig(defineGame({ ...rules, defaults: { group_size: 3 } }), [])).toMatchObject({ max_turns: 100, group_size: 3 });
    const item = await itemAt(3);
    expect(item).toEqual({ index: 3, seed: hashSeed(0, 3) });
    expect(await itemAt(3, ['--env.size', '2'])).toEqual({ index: 1, seed: hashSeed(0, 1) });
    expect(await itemAt(3, ['--env.seed', '9'])).toEqual({ index: 3, seed: hashSeed(9, 3) });
    const [system, user] = guessing.prompt(item, config);
    expect(system!.content).toContain('Guess my number.\n\nActions:\n- guess <number>: Guess the number.\n- reroll: Draw a new number.');
    expect(system!.content).toContain(
      'call one of the tools, or write the command as the last line of your reply (or inside <action></action>), for example `guess 3`',
    );
    expect(user).toEqual({ role: 'user', content: 'Rerolls so far: 0.' });
    expect(await guessing.tools!(item, config)).toHaveLength(3);
    const textOnly = resolveEnvConfig(guessing, ['--env.offer_tools', 'false']);
    expect(await guessing.tools!(item, textOnly)).toEqual([]);
    expect(guessing.prompt(item, textOnly)[0]!.content).toContain('write the command as the last line of your reply');
  });

  it("plays a whole episode: text and tool moves, the game's rewards per turn, the return as the score", async () => {
    const item = await itemAt(0);
    const target = targetOf(item);
    const wrong = (target + 1) % 10;
    const episode = await playEpisode(guessing, {
      item,
      replies: [say(`guess ${wrong}`), say('hmm, no idea'), toolCall('guess', { number: target }, 'call-x')],
    });
    expect(episode.turns).toBe(3);
    const answers = episode.messages.slice(2).filter((m) => m.role !== 'assistant');
    expect(answers.map((m) => m.role)).toEqual(['user', 'user', 'tool']);
    expect(answers[0]!.content).toBe(`${wrong < target ? 'Higher.' : 'Lower.'}\nReward -1, total -1.\n\nRerolls so far: 0.`);
    expect(answers[1]!.content).toBe(
      'No action: "hmm, no idea" is not an action (actions: guess, reroll, pick up).\nReward -2, total -3.\n\nRerolls so far: 0.',
    );
    expect(answers[2]).toEqual({
      role: 'tool',
      tool_call_id: 'call-x',
      name: 'guess',
      content: 'Right!\nReward +5, total +2.\n\nThe game is over.',
    });
    expect(episode.score).toBe(2);
    expect(episode.metrics).toEqual({ steps: 3, invalid_actions: 1, finished: 1, timed_out: 0, rerolls: 0 });
  });

  it('answers every call of a turn but plays only the first', async () => {
    const item = await itemAt(1);
    const both: Message = {
      role: 'assistant',
      content: '',
      tool_calls: [
        { id: 'a', type: 'function', function: { name: 'guess', arguments: JSON.stringify({ number: targetOf(item) }) } },
        { id: 'b', type: 'function', function: { name: 'reroll', arguments: '{}' } },
      ],
    };
    const episode = await playEpisode(guessing, { item, replies: [both] });
    expect(episode.messages.slice(3)).toEqual([
      { role: 'tool', tool_call_id: 'a', name: 'guess', content: 'Right!\nReward +5, total +5.\n\nThe game is over.' },
      { role: 'tool', tool_call_id: 'b', name: 'reroll', content: 'Not played: one action per turn.' },
    ]);
    expect(episode.score).toBe(5);
  });

  it('ends a game at its step limit as timed out, and an unknown tool or bad arguments as unreadable', async () => {
    const item = await itemAt(2);
    const wrong = (targetOf(item) + 5) % 10;
    const episode = await playEpisode(guessing, {
      item,
      replies: [
        toolCall('cheat', {}, 'a'),
        toolCall('guess', { number: 42 }, 'b'),
        say(`guess ${wrong}`),
        say(`guess ${wrong}`),
        say(`guess ${wrong}`),
        say('never played'),
      ],
    });
    expect(episode.turns).toBe(5);
    expect(episode.score).toBe(-2 - 2 - 1 - 1 - 1);
    expect(episode.metrics).toEqual({ steps: 5, invalid_actions: 2, finished: 0, timed_out: 1, rerolls: 0 });
    expect(episode.messages[3]!.content).toContain('No action: unknown action "cheat"');
    expect(episode.messages.at(-1)!.content).toMatch(/Reward -1, total -7\.\n\nThe game is over: it ends after 5 steps\.$/);
  });

  it('keeps the game and its generator in a JSON-safe slot: a step resumed from the stored slot plays the same', async () => {
    const item = await itemAt(4);
    let slot = guessing.initialState!(item, 0, config);
    expect(slot).toEqual({
      game: { target: targetOf(item), rerolls: 0 },
      random: expect.any(Number),
      steps: 0,
      reward: 0,
      invalid: 0,
      done: false,
      timedOut: false,
    });
    const stepWith = (state: GameSlot<Guessing>, reply: Message, turn: number) =>
      guessing.step!(
        {
          item,
          messages: [reply],
          turn,
          sample: 0,
          state,
          toolResults: [],
          group: null,
          config,
          signal: new AbortController().signal,
          heartbeat: () => {},
        },
        config,
      );
    for (let turn = 0; turn < 3; turn++) {
      const stored = JSON.parse(JSON.stringify(slot)) as GameSlot<Guessing>;
      const live = await stepWith(slot, say('reroll'), turn);
      const resumed = await stepWith(stored, say('reroll'), turn);
      expect(resumed).toEqual(live);
      expect(JSON.parse(JSON.stringify(live.state))).toEqual(live.state);
      slot = live.state!;
    }
    // Three rerolls drew three numbers after the start's: the slot's generator continued the item's sequence.
    const random = seededRandom(item.seed);
    const draws = [random.int(10), random.int(10), random.int(10), random.int(10)];
    expect(slot.game).toEqual({ target: draws[3], rerolls: 3 });
    expect(slot.random).toBe(random.state);
    // The slot is never changed in place: the step works on a copy.
    const before = JSON.stringify(slot);
    await stepWith(slot, say('reroll'), 3);
    expect(JSON.stringify(slot)).toBe(before);
    expect(await stepWith({ ...slot, done: true }, say('reroll'), 4)).toEqual({ messages: [], done: true, reward: 0 });
    // A slot without a game (a store that gave back something else) is a fault to retry, never a score.
    expect(() => stepWith(null as never, say('reroll'), 5)).toThrow(/state slot holds no game/);
  });
});
