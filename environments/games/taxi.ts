import { defineGame, type Game, parseCommand, z, type GameAction } from 'clotho';
import {
  decode,
  IN_TAXI,
  LANDMARK_LETTERS,
  LANDMARKS,
  MAP,
  START_STATES,
  TAXI_ACTIONS,
  transition,
  type TaxiAction,
  type TaxiPosition,
} from './taxi-rules.js';

/** The game's state: Gymnasium's position and whether the passenger was ever picked up (a metric). JSON-safe. */
export interface TaxiState extends TaxiPosition {
  pickedUp: boolean;
}

const DESCRIPTIONS: Record<TaxiAction, string> = {
  south: 'Drive one row down (Gymnasium action 0).',
  north: 'Drive one row up (action 1).',
  east: 'Drive one column right (action 2).',
  west: 'Drive one column left (action 3).',
  pickup: 'Pick the passenger up; only where the passenger waits, else −10 (action 4).',
  dropoff: 'Drop the passenger off; +20 at the destination, −10 with no passenger or off a landmark (action 5).',
};
const ALIASES: Record<TaxiAction, string[]> = {
  south: ['down', 's', '0'],
  north: ['up', 'n', '1'],
  east: ['right', 'e', '2'],
  west: ['left', 'w', '3'],
  pickup: ['pick up', '4'],
  dropoff: ['drop off', '5'],
};
/** Gymnasium's six actions in id order; the ids, `up`/`down`/…, `n`/`s`/… and `pick up`/`drop off` also read in text. */
export const TAXI_GAME_ACTIONS: readonly GameAction[] = TAXI_ACTIONS.map((name) => ({
  name,
  description: DESCRIPTIONS[name],
  aliases: ALIASES[name],
}));

const place = (landmark: number) => `${LANDMARK_LETTERS[landmark]} (row ${LANDMARKS[landmark]![0]}, column ${LANDMARKS[landmark]![1]})`;

/** The map with the taxi drawn as `T` on its cell. */
export function drawMap({ row, col }: TaxiPosition): string {
  return MAP.map((line, r) => (r === row + 1 ? `${line.slice(0, 2 * col + 1)}T${line.slice(2 * col + 2)}` : line)).join('\n');
}

/** What the driver sees: the map with the taxi, its cell, the passenger and the destination. */
export function describeTaxi(state: TaxiPosition): string {
  const passenger = state.passenger === IN_TAXI ? 'The passenger is in the taxi.' : `The passenger waits at ${place(state.passenger)}.`;
  return `${drawMap(state)}\nThe taxi (T) is at row ${state.row}, column ${state.col}. ${passenger} Destination: ${place(state.destination)}.`;
}

/** What the game says an action did: a move that left the taxi where it was hit a wall or the border. */
function message(action: TaxiAction, from: TaxiPosition, to: TaxiPosition, reward: number): string {
  if (action === 'pickup') return reward === -10 ? 'There is no passenger here to pick up.' : 'You pick the passenger up.';
  if (action === 'dropoff') {
    if (reward === 20) return 'You drop the passenger off at the destination.';
    return reward === -10
      ? 'You cannot drop off here.'
      : `You set the passenger down at ${LANDMARK_LETTERS[to.passenger]}, which is not the destination.`;
  }
  return from.row === to.row && from.col === to.col
    ? `You cannot drive ${action} from here: a wall or the edge of the map.`
    : `You drive ${action}.`;
}

const config = {
  max_steps: z.number().int().positive().default(200).describe("steps before the episode ends unfinished (Taxi-v3's TimeLimit)"),
  invalid_reward: z.number().default(-10).describe('reward of a reply without an action (the taxi stays; the step counts)'),
};

/**
 * Taxi as Gymnasium's `Taxi-v3` plays it: drive to the passenger, pick up, drive to the destination, drop off. −1 per
 * step, +20 for the delivery, −10 for an illegal pickup or dropoff, at most 200 steps. A reply without an action costs
 * `--env.invalid_reward` (−10, as an illegal action) and a step, and the taxi stays.
 */
export const taxiGame: Game<TaxiState, typeof config> = {
  name: 'taxi',
  description: "Taxi with Gymnasium's Taxi-v3 map, rules and rewards, driven one action per turn as text or tool calls",
  config,
  // One turn more than the step limit: Clotho does not step an episode's last turn, and the game's own limit ends it.
  defaults: { max_turns: 201, max_token_length: 8192, group_size: 8 },
  actions: TAXI_GAME_ACTIONS,

  rules: ({ max_steps }) =>
    'You drive a taxi on a 5×5 grid. Rows are numbered 0 to 4 from the top, columns 0 to 4 from the left. On the map, ' +
    '`|` is a wall the taxi cannot cross going east or west and `:` is open road; the outer border cannot be crossed. ' +
    'R, G, Y and B are the four landmarks where passengers wait and want to go. Drive to the passenger, pick them up, ' +
    'drive to their destination and drop them off. Every step costs −1; the delivery earns +20; a pickup or dropoff ' +
    `where it is not allowed costs −10. The episode ends with the delivery, or after ${max_steps} steps.`,

  start: ({ random }): TaxiState => ({ ...decode(random.pick(START_STATES)), pickedUp: false }),
  observe: (state) => describeTaxi(state),
  parseText: (text) => parseCommand(text.replace(/^(?:move|go|drive)\s+/i, ''), TAXI_GAME_ACTIONS),

  play(state, command) {
    const action = command.name as TaxiAction;
    const { position, reward, done } = transition(state, action);
    const next = { ...position, pickedUp: state.pickedUp || position.passenger === IN_TAXI };
    return { state: next, reward, done, message: message(action, state, position, reward) };
  },

  unreadable: (state, problem, { config }) => ({
    state,
    reward: config.invalid_reward,
    done: false,
    message: `No action: ${problem}. The taxi stays.`,
  }),
  maxSteps: (config) => config.max_steps,
  metrics: (state) => ({
    delivered: state.passenger === state.destination ? 1 : 0,
    picked_up: state.pickedUp ? 1 : 0,
  }),
};

/** The `taxi` environment: {@link taxiGame} played by Clotho's game loop. */
export default defineGame(taxiGame);
