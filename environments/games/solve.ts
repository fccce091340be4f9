/**
 * Optimal plans by breadth-first search, for the tests and the scripted players: Taxi's and the adventure's rewards are
 * −1 per action until the one that ends the game, so the shortest plan is the one with the best return.
 */
import { seededRandom, type GameCommand } from 'clotho';
import { adventureGame, HELD, worldOf, type AdventureConfig, type AdventureState } from './adventure.js';
import { encode, TAXI_ACTIONS, transition, type TaxiAction, type TaxiPosition } from './taxi-rules.js';
import { DIRECTIONS } from './world.js';

/** A game as a search problem: the moves from a state, what a move does, and a key that names a state. */
export interface SearchProblem<S, M> {
  moves(state: S): readonly M[];
  next(state: S, move: M): { state: S; done: boolean };
  key(state: S): string | number;
}

/** The shortest list of moves from `start` to a move that ends the game, or null when no such list exists. */
export function shortestPlan<S, M>(start: S, problem: SearchProblem<S, M>): M[] | null {
  const seen = new Set([problem.key(start)]);
  let frontier: { state: S; plan: M[] }[] = [{ state: start, plan: [] }];
  while (frontier.length > 0) {
    const next: typeof frontier = [];
    for (const { state, plan } of frontier) {
      for (const move of problem.moves(state)) {
        const result = problem.next(state, move);
        if (result.done) return [...plan, move];
        const key = problem.key(result.state);
        if (seen.has(key)) continue;
        seen.add(key);
        next.push({ state: result.state, plan: [...plan, move] });
      }
    }
    frontier = next;
  }
  return null;
}

/** Taxi's optimal actions from a position (every position of an episode can still deliver). */
export function taxiPlan(start: TaxiPosition): TaxiAction[] {
  const plan = shortestPlan<TaxiPosition, TaxiAction>(start, {
    moves: () => TAXI_ACTIONS,
    next: (state, action) => {
      const { position, done } = transition(state, action);
      return { state: position, done };
    },
    key: encode,
  });
  if (!plan) throw new Error(`no delivery from ${JSON.stringify(start)}`);
  return plan;
}

/**
 * The shortest plan of an adventure, or null when the world cannot be solved. Only moves that can matter are tried
 * (walking, unlocking, taking keys and the treasure, putting the treasure down): the rest never shortens a plan.
 */
export function adventurePlan(seed: number, config: AdventureConfig, from?: AdventureState): GameCommand[] | null {
  const world = worldOf(seed, config);
  const context = { seed, config, random: seededRandom(seed) };
  const useful = (item: string) => item === world.treasure || item.endsWith(' key');
  const start = from ?? adventureGame.start(context);
  return shortestPlan<AdventureState, GameCommand>(start, {
    moves: (state) => [
      ...DIRECTIONS.filter((d) => world.rooms[state.room]!.exits[d] !== undefined).flatMap((direction) => [
        { name: 'go', arguments: { direction } },
        { name: 'unlock', arguments: { direction } },
      ]),
      ...Object.keys(state.items)
        .filter((item) => useful(item) && state.items[item] === state.room)
        .map((item) => ({ name: 'take', arguments: { item } })),
      ...(state.items[world.treasure] === HELD && state.room === world.goal ? [{ name: 'drop', arguments: { item: world.treasure } }] : []),
    ],
    next: (state, command) => adventureGame.play(structuredClone(state), command, context),
    key: (state) =>
      JSON.stringify([
        state.room,
        state.unlocked.toSorted(),
        Object.keys(state.items)
          .filter(useful)
          .map((item) => state.items[item]),
      ]),
  });
}
