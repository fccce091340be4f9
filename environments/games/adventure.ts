import {
  defineGame,
  hashSeed,
  parseCommand,
  seededRandom,
  z,
  type Game,
  type GameAction,
  type GameConfig,
  type GameCommand,
  type GameOutcome,
} from 'clotho';
import { DIRECTIONS, doorBetween, generateWorld, WORLD_LIMITS, type Direction, type World, type WorldOptions } from './world.js';

/** Where the player is and what has changed: item → room (or `HELD`), doors unlocked, rooms seen. JSON-safe. */
export interface AdventureState {
  room: number;
  items: Record<string, number>;
  unlocked: number[];
  visited: number[];
  won: boolean;
}

/** An item's location while the player carries it. */
export const HELD = -1;

const config = {
  rooms: z.number().int().min(2).max(WORLD_LIMITS.rooms).default(6).describe('rooms in each world'),
  locks: z.number().int().min(0).max(WORLD_LIMITS.locks).default(2).describe('locked doors (each key lies where it can be reached first)'),
  distractors: z.number().int().min(0).max(WORLD_LIMITS.distractors).default(2).describe('useless things lying about'),
  max_steps: z.number().int().positive().default(50).describe('actions before the episode ends unfinished'),
  goal_reward: z.number().default(20).describe('reward of the action that completes the goal'),
  invalid_reward: z.number().default(-10).describe('reward of a reply without an action (nothing happens; the step counts)'),
};

/** The adventure's resolved config. */
export type AdventureConfig = GameConfig<typeof config>;

const worlds = new Map<string, World>();

/**
 * The world an episode plays in: a pure function of the episode's seed and the world options, so the state slot keeps
 * only what changes. Recent worlds are kept (read-only) rather than generated again on every step.
 */
export function worldOf(seed: number, { rooms, locks, distractors }: WorldOptions): World {
  const key = `${seed}/${rooms}/${locks}/${distractors}`;
  let world = worlds.get(key);
  if (!world) {
    world = generateWorld(seededRandom(hashSeed(seed, 'world')), { rooms, locks, distractors });
    if (worlds.size >= 256) worlds.delete(worlds.keys().next().value!);
    worlds.set(key, world);
  }
  return world;
}

const Item = z.object({ item: z.string().min(1).describe('the item, e.g. "red key"') });
const Way = z.object({ direction: z.enum(DIRECTIONS) });
/** The adventure's verbs; a bare direction (`north`, `n`) reads as `go north`. */
export const ADVENTURE_ACTIONS: readonly GameAction[] = [
  { name: 'go', description: 'Walk through an exit.', parameters: Way, aliases: ['walk', 'move', 'head'], example: 'go north' },
  { name: 'take', description: 'Pick up an item in this room.', parameters: Item, aliases: ['get', 'grab', 'pick up'] },
  { name: 'drop', description: 'Put down an item you carry, in this room.', parameters: Item, aliases: ['put down', 'put', 'leave'] },
  {
    name: 'unlock',
    description: 'Unlock the door in a direction with the key of its colour, which you must carry.',
    parameters: Way,
    aliases: ['open'],
  },
  { name: 'look', description: 'Describe the room again.', aliases: ['l', 'look around'] },
  { name: 'inventory', description: 'List what you carry.', aliases: ['i', 'inv'] },
];
const SHORT: Record<string, Direction> = { n: 'north', e: 'east', s: 'south', w: 'west' };

const a = (item: string) => `${/^[aeiou]/.test(item) ? 'an' : 'a'} ${item}`;
const list = (items: string[]) => (items.length === 0 ? 'nothing' : items.map(a).join(', '));
const itemsAt = (state: AdventureState, where: number) => Object.keys(state.items).filter((item) => state.items[item] === where);

function describe(world: World, state: AdventureState): string {
  const room = world.rooms[state.room]!;
  const exits = DIRECTIONS.flatMap((direction) => {
    const next = room.exits[direction];
    if (next === undefined) return [];
    const door = doorBetween(world, state.room, next);
    const locked = door >= 0 && !state.unlocked.includes(door);
    return [locked ? `${direction} through a locked ${world.doors[door]!.colour} door` : `${direction} to the ${world.rooms[next]!.name}`];
  });
  return [
    `You are in the ${room.name}. Exits: ${exits.join(', ')}.`,
    `You see: ${list(itemsAt(state, state.room))}. You carry: ${list(itemsAt(state, HELD))}.`,
    `Goal: put the ${world.treasure} down in the ${world.rooms[world.goal]!.name}.`,
  ].join('\n');
}

/** What a name means among `candidates`: the exact item, else the only one ending in it (`key` for `red key`). */
function find(name: string, candidates: string[]): { item?: string; wanted: string; ambiguous: string[] } {
  const wanted = name.replace(/^(?:the|a|an)\s+/, '');
  if (candidates.includes(wanted)) return { item: wanted, wanted, ambiguous: [] };
  const ends = candidates.filter((item) => item.endsWith(` ${wanted}`));
  return ends.length === 1 ? { item: ends[0], wanted, ambiguous: [] } : { wanted, ambiguous: ends };
}

const which = (items: string[]) => `Which one: ${items.map((i) => `the ${i}`).join(' or ')}?`;

/** One command, every outcome costing a step (−1) but the one that completes the goal. */
function act(world: World, state: AdventureState, command: GameCommand, goalReward: number): GameOutcome<AdventureState> {
  const step = (message: string): GameOutcome<AdventureState> => ({ state, reward: -1, done: false, message });
  const room = world.rooms[state.room]!;
  const { direction, item: named } = command.arguments as { direction?: Direction; item?: string };
  switch (command.name) {
    case 'go': {
      const next = room.exits[direction!];
      if (next === undefined) return step(`There is no exit ${direction}.`);
      const door = doorBetween(world, state.room, next);
      if (door >= 0 && !state.unlocked.includes(door)) return step(`The ${world.doors[door]!.colour} door to the ${direction} is locked.`);
      state.room = next;
      if (!state.visited.includes(next)) state.visited.push(next);
      return step(`You go ${direction} to the ${world.rooms[next]!.name}.`);
    }
    case 'take': {
      const { item, wanted, ambiguous } = find(named!, itemsAt(state, state.room));
      if (ambiguous.length > 0) return step(which(ambiguous));
      if (!item) return step(find(named!, itemsAt(state, HELD)).item ? 'You already carry that.' : `There is no ${wanted} here.`);
      state.items[item] = HELD;
      return step(`You take the ${item}.`);
    }
    case 'drop': {
      const { item, wanted, ambiguous } = find(named!, itemsAt(state, HELD));
      if (ambiguous.length > 0) return step(which(ambiguous));
      if (!item) return step(`You do not carry any ${wanted}.`);
      state.items[item] = state.room;
      if (item !== world.treasure || state.room !== world.goal) return step(`You drop the ${item}.`);
      state.won = true;
      return {
        state,
        reward: goalReward,
        done: true,
        message: `You put the ${item} down in the ${room.name}. You have completed your goal!`,
      };
    }
    case 'unlock': {
      const next = room.exits[direction!];
      const door = next === undefined ? -1 : doorBetween(world, state.room, next);
      if (door < 0) return step(`There is no locked door to the ${direction}.`);
      if (state.unlocked.includes(door)) return step(`The door to the ${direction} is already unlocked.`);
      const key = `${world.doors[door]!.colour} key`;
      if (state.items[key] !== HELD) return step(`You need the ${key} to unlock this door.`);
      state.unlocked.push(door);
      return step(`You unlock the ${world.doors[door]!.colour} door with the ${key}.`);
    }
    case 'inventory':
      return step(`You carry: ${list(itemsAt(state, HELD))}.`);
    default:
      return step('You look around.');
  }
}

/** The text adventure's rules, for tests and solvers that play it without the environment loop. */
export const adventureGame: Game<AdventureState, typeof config> = {
  name: 'text_adventure',
  description: 'A text adventure in a generated world: find keys, unlock doors and bring a treasure to a goal room',
  config,
  // One turn more than the step limit: Clotho does not step an episode's last turn, and the game's own limit ends it.
  defaults: { max_turns: 51, max_token_length: 8192, group_size: 8 },
  actions: ADVENTURE_ACTIONS,

  rules: ({ max_steps, goal_reward }) =>
    'You are playing a text adventure. You explore rooms joined by exits (north, east, south, west); some doors are ' +
    'locked and open with the key of their colour, which you must carry. Your goal is to put a treasure down in a ' +
    `given room. Every action costs −1; the action that completes the goal earns +${goal_reward} instead. ` +
    `The game ends when the goal is done, or after ${max_steps} actions.`,

  start: ({ seed, config }) => {
    const world = worldOf(seed, config);
    return { room: world.start, items: { ...world.items }, unlocked: [], visited: [world.start], won: false };
  },
  observe: (state, { seed, config }) => describe(worldOf(seed, config), state),
  parseText(text) {
    const bare = text.trim().toLowerCase();
    const direction = SHORT[bare] ?? (DIRECTIONS as readonly string[]).find((d) => d === bare);
    return parseCommand(
      direction ? `go ${direction}` : text.replace(/^go\s+([nesw])$/i, (_, d: string) => `go ${SHORT[d.toLowerCase()]}`),
      ADVENTURE_ACTIONS,
    );
  },
  play: (state, command, { seed, config }) => act(worldOf(seed, config), state, command, config.goal_reward),
  unreadable: (state, problem, { config }) => ({
    state,
    reward: config.invalid_reward,
    done: false,
    message: `No action: ${problem}. Nothing happens.`,
  }),
  maxSteps: (config) => config.max_steps,
  metrics: (state, { seed, config }) => ({
    won: state.won ? 1 : 0,
    rooms_visited: state.visited.length / worldOf(seed, config).rooms.length,
  }),
};

/**
 * A text adventure in a world generated from each episode's seed: rooms, keys, locked doors and a treasure to bring
 * to a goal room, played by text commands (`go north`, `take red key`) or tool calls. −1 per action, +20 for the one
 * that completes the goal, −10 for a reply without an action.
 */
export default defineGame(adventureGame);
