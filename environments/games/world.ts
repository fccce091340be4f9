/**
 * Generated worlds of the text adventure: rooms on a grid joined as a tree (so north and south mean what they say),
 * some doors locked with coloured keys placed where the player can reach them first, a treasure, a goal room and a
 * few things that are of no use. A world is a pure function of its generator, so a seed names one world.
 */
import type { SeededRandom } from 'clotho';

/** The ways out of a room, clockwise. */
export const DIRECTIONS = ['north', 'east', 'south', 'west'] as const;
/** One of {@link DIRECTIONS}. */
export type Direction = (typeof DIRECTIONS)[number];
const STEP: Record<Direction, [number, number]> = { north: [-1, 0], east: [0, 1], south: [1, 0], west: [0, -1] };
/** The way back. */
export const OPPOSITE: Record<Direction, Direction> = { north: 'south', east: 'west', south: 'north', west: 'east' };

const ROOM_NAMES = [
  'hall',
  'kitchen',
  'library',
  'cellar',
  'study',
  'gallery',
  'pantry',
  'armoury',
  'chapel',
  'garden',
  'attic',
  'ballroom',
  'vault',
  'workshop',
  'conservatory',
  'nursery',
  'observatory',
  'scullery',
  'larder',
  'solar',
];
const COLOURS = ['red', 'blue', 'green', 'yellow', 'white', 'black'];
const TREASURES = ['golden crown', 'silver chalice', 'jade idol', 'ruby amulet', 'crystal orb', 'ivory horn'];
const THINGS = [
  'old lamp',
  'rusty sword',
  'leather book',
  'wooden box',
  'copper coin',
  'clay pot',
  'silk scarf',
  'iron bell',
  'glass bottle',
  'feather quill',
];

/** The most rooms, locks and useless things a world may have. */
export const WORLD_LIMITS = { rooms: ROOM_NAMES.length, locks: COLOURS.length, distractors: THINGS.length } as const;

/** A room and where its exits lead. */
export interface Room {
  name: string;
  /** The neighbouring room's index through each exit. */
  exits: Partial<Record<Direction, number>>;
}

/** A door locked at the start, between two rooms; the `<colour> key` unlocks it. */
export interface Door {
  between: [number, number];
  colour: string;
}

/** A whole world: fixed for an episode, so it is generated from the seed and never stored in the state slot. */
export interface World {
  rooms: Room[];
  doors: Door[];
  /** Where each item lies at the start: keys, the treasure and the useless things. */
  items: Record<string, number>;
  start: number;
  treasure: string;
  /** The room the treasure must be put down in. */
  goal: number;
}

/** How big a world is (`--env.rooms`, `--env.locks`, `--env.distractors`). */
export interface WorldOptions {
  rooms: number;
  locks: number;
  distractors: number;
}

/** The locked door between two rooms, if any. */
export const doorBetween = (world: World, a: number, b: number): number =>
  world.doors.findIndex(({ between: [x, y] }) => (x === a && y === b) || (x === b && y === a));

/** Rooms reachable from `from` through doors that are open or unlockable (`opened(door)`). */
function reachable(world: World, from: number, opened: (door: number) => boolean): Set<number> {
  const seen = new Set([from]);
  const queue = [from];
  for (let room = queue.shift(); room !== undefined; room = queue.shift()) {
    for (const next of Object.values(world.rooms[room]!.exits)) {
      const door = doorBetween(world, room, next);
      if (seen.has(next) || (door >= 0 && !opened(door))) continue;
      seen.add(next);
      queue.push(next);
    }
  }
  return seen;
}

/** Grows a tree of rooms on the grid: each new room opens off a random side of a room already there. */
function growRooms(random: SeededRandom, count: number): Room[] {
  const names = random.shuffle(ROOM_NAMES);
  const cells: [number, number][] = [[0, 0]];
  const rooms: Room[] = [{ name: names[0]!, exits: {} }];
  while (rooms.length < count) {
    const from = random.int(rooms.length);
    const direction = random.pick(DIRECTIONS);
    const [r, c] = cells[from]!;
    const cell: [number, number] = [r + STEP[direction][0], c + STEP[direction][1]];
    if (cells.some(([x, y]) => x === cell[0] && y === cell[1])) continue;
    rooms[from]!.exits[direction] = rooms.length;
    rooms.push({ name: names[rooms.length]!, exits: { [OPPOSITE[direction]]: from } });
    cells.push(cell);
  }
  return rooms;
}

/** A world for these options, drawn from `random`. */
export function generateWorld(random: SeededRandom, options: WorldOptions): World {
  const rooms = growRooms(random, options.rooms);
  const edges = rooms.flatMap((room, a) =>
    Object.values(room.exits)
      .filter((b) => b > a)
      .map((b): [number, number] => [a, b]),
  );
  const colours = random.shuffle(COLOURS);
  const doors = random
    .shuffle(edges)
    .slice(0, Math.min(options.locks, edges.length))
    .map((between, i) => ({ between, colour: colours[i]! }));
  const world: World = { rooms, doors, items: {}, start: random.int(rooms.length), treasure: random.pick(TREASURES), goal: 0 };
  // Each key lies where the player can get before its door opens: in a room reachable with the keys placed so far.
  const placed = new Set<number>();
  while (placed.size < doors.length) {
    const open = reachable(world, world.start, (d) => placed.has(d));
    const next = doors.map((_, d) => d).filter((d) => !placed.has(d) && doors[d]!.between.some((room) => open.has(room)));
    const door = random.pick(next);
    world.items[`${doors[door]!.colour} key`] = random.pick([...open]);
    placed.add(door);
  }
  const treasureRoom = random.int(rooms.length);
  world.items[world.treasure] = treasureRoom;
  world.goal = random.pick(rooms.map((_, i) => i).filter((i) => i !== treasureRoom));
  for (const thing of random.shuffle(THINGS).slice(0, options.distractors)) world.items[thing] = random.int(rooms.length);
  return world;
}
