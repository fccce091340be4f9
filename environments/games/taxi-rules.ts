/**
 * Taxi's rules as Gymnasium's `Taxi-v3` has them (gymnasium/envs/toy_text/taxi.py, Dietterich's MAXQ paper): a 5×5
 * grid with walls, four landmarks R, G, Y, B, 500 states and 6 deterministic actions. Pure functions, so that the
 * tests check the transition of every state and action.
 */

/** The map as Gymnasium draws it: `|` is a wall between two columns, `:` a way through. */
export const MAP = ['+---------+', '|R: | : :G|', '| : | : : |', '| : : : : |', '| | : | : |', '|Y| : |B: |', '+---------+'] as const;

/** The landmarks' (row, column): 0 = R(ed), 1 = G(reen), 2 = Y(ellow), 3 = B(lue). */
export const LANDMARKS = [
  [0, 0],
  [0, 4],
  [4, 0],
  [4, 3],
] as const;
export const LANDMARK_LETTERS = ['R', 'G', 'Y', 'B'] as const;
/** The passenger's location while riding. */
export const IN_TAXI = 4;

/** Gymnasium's action ids, in order: 0 south, 1 north, 2 east, 3 west, 4 pickup, 5 dropoff. */
export const TAXI_ACTIONS = ['south', 'north', 'east', 'west', 'pickup', 'dropoff'] as const;
/** One of Gymnasium's actions, by name. */
export type TaxiAction = (typeof TAXI_ACTIONS)[number];

/** One of the 500 states: the taxi's cell, the passenger's location (0–3 a landmark, 4 in the taxi), the destination. */
export interface TaxiPosition {
  row: number;
  col: number;
  passenger: number;
  destination: number;
}

/** Gymnasium's state number: `((row * 5 + col) * 5 + passenger) * 4 + destination`. */
export const encode = ({ row, col, passenger, destination }: TaxiPosition): number => ((row * 5 + col) * 5 + passenger) * 4 + destination;

/** The position a state number stands for. */
export function decode(state: number): TaxiPosition {
  const destination = state % 4;
  const passenger = Math.floor(state / 4) % 5;
  const col = Math.floor(state / 20) % 5;
  return { row: Math.floor(state / 100), col, passenger, destination };
}

/** The 300 states an episode starts from, uniformly: the passenger waiting at a landmark that is not the destination. */
export const START_STATES: readonly number[] = Array.from({ length: 500 }, (_, s) => s).filter((s) => {
  const { passenger, destination } = decode(s);
  return passenger < IN_TAXI && passenger !== destination;
});

/** The landmark at a cell, or -1. */
export const landmarkAt = (row: number, col: number): number => LANDMARKS.findIndex(([r, c]) => r === row && c === col);

/** What one action does: Gymnasium's transition table, row by row. */
export function transition(from: TaxiPosition, action: TaxiAction): { position: TaxiPosition; reward: number; done: boolean } {
  let { row, col, passenger } = from;
  const { destination } = from;
  let reward = -1;
  let done = false;
  if (action === 'south') row = Math.min(row + 1, 4);
  else if (action === 'north') row = Math.max(row - 1, 0);
  else if (action === 'east') col = MAP[1 + row]![2 * col + 2] === ':' ? Math.min(col + 1, 4) : col;
  else if (action === 'west') col = MAP[1 + row]![2 * col] === ':' ? Math.max(col - 1, 0) : col;
  else if (action === 'pickup') {
    if (passenger < IN_TAXI && landmarkAt(row, col) === passenger) passenger = IN_TAXI;
    else reward = -10;
  } else {
    const here = landmarkAt(row, col);
    if (passenger === IN_TAXI && here === destination) [passenger, reward, done] = [destination, 20, true];
    else if (passenger === IN_TAXI && here >= 0)
      passenger = here; // set down at another landmark: a plain step
    else reward = -10;
  }
  return { position: { row, col, passenger, destination }, reward, done };
}
