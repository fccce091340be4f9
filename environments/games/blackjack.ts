import { defineGame, type Game, z, type GameAction, type GameOutcome } from 'clotho';
import { cardName, dealerPlays, isBust, showdown, sumHand, usableAce, type Rank } from './cards.js';

/** A hand in progress: the dealer's first card is the one showing. JSON-safe, kept in the state slot. */
export interface BlackjackState {
  player: Rank[];
  dealer: Rank[];
  /** How the hand ended, once it has: `win`, `loss`, `draw` (`bust` and `forfeit` are losses too). */
  result: 'win' | 'loss' | 'draw' | 'bust' | 'forfeit' | null;
}

/** Gymnasium's two actions, with their ids as aliases so that `0` and `1` work too. */
export const BLACKJACK_ACTIONS: readonly GameAction[] = [
  {
    name: 'stick',
    description: 'Take no more cards; the dealer plays and the hand is settled (Gymnasium action 0).',
    aliases: ['stand', 'stay', '0'],
  },
  { name: 'hit', description: 'Take another card (Gymnasium action 1).', aliases: ['draw', '1'] },
];

const hand = (cards: readonly Rank[]) => cards.map(cardName).join(', ');
const describe = (cards: readonly Rank[]) => `${hand(cards)} (sum ${sumHand(cards)}${usableAce(cards) ? ', usable ace' : ''})`;
const RESULT_TEXT = { win: 'You win.', loss: 'You lose.', draw: 'A draw.' } as const;

const config = {
  natural: z.boolean().default(false).describe('a winning natural (ace and ten) pays 1.5 (ignored when sab is set)'),
  sab: z
    .boolean()
    .default(true)
    .describe("Sutton & Barto's rule: a natural wins unless the dealer has one (Blackjack-v1's registered default)"),
  invalid_reward: z.number().default(-1).describe('reward of a reply without an action; it forfeits the hand'),
};

/**
 * Blackjack as Gymnasium's `Blackjack-v1` plays it: stick or hit against a dealer who draws to 17, +1 for a win,
 * −1 for a loss, 0 for a draw (1.5 for a winning natural with `--env.natural`). A reply without an action forfeits
 * the hand (−1), as Atropos's blackjack environment ends an episode on an unreadable action.
 */
export const blackjackGame: Game<BlackjackState, typeof config> = {
  name: 'blackjack',
  description: "Blackjack with Gymnasium's Blackjack-v1 rules and rewards, played by stick/hit as text or tool calls",
  config,
  defaults: { max_turns: 25, max_token_length: 4096, group_size: 8 },
  actions: BLACKJACK_ACTIONS,

  rules: () =>
    'You are playing blackjack against a dealer. Cards are drawn from an infinite deck: number cards count their ' +
    'number, J, Q and K count 10, an ace counts 11 unless that would take you over 21 (then 1). Get closer to 21 ' +
    'than the dealer without going over. You may hit (take a card) as often as you like; over 21 you bust and lose ' +
    'at once. When you stick, the dealer reveals the hidden card and draws until reaching 17 or more. A win is ' +
    'worth +1, a loss −1, a draw 0.',

  start({ random }) {
    // Gymnasium's order: the dealer's two cards, then the player's.
    const draw = () => 1 + random.int(13);
    const dealer = [draw(), draw()];
    return { dealer, player: [draw(), draw()], result: null };
  },

  observe: (state) => `Your cards: ${describe(state.player)}. The dealer shows ${cardName(state.dealer[0]!)}.`,

  play(state, command, { random, config }): GameOutcome<BlackjackState> {
    const draw = () => 1 + random.int(13);
    if (command.name === 'hit') {
      const card = draw();
      state.player.push(card);
      const bust = isBust(state.player);
      if (bust) state.result = 'bust';
      const message = `You draw ${cardName(card)}: ${describe(state.player)}.${bust ? ' Bust: you lose.' : ''}`;
      return { state, reward: bust ? -1 : 0, done: bust, message };
    }
    const hidden = state.dealer[1]!;
    state.dealer = dealerPlays(state.dealer, draw);
    const reward = showdown(state.player, state.dealer, config);
    state.result = reward > 0 ? 'win' : reward < 0 ? 'loss' : 'draw';
    const drawn = state.dealer.slice(2);
    const dealer = `The dealer reveals ${cardName(hidden)}${drawn.length > 0 ? ` and draws ${hand(drawn)}` : ''}: ${describe(state.dealer)}${isBust(state.dealer) ? ', bust' : ''}.`;
    return { state, reward, done: true, message: `You stick at ${sumHand(state.player)}. ${dealer} ${RESULT_TEXT[state.result]}` };
  },

  unreadable: (state, problem, { config }) => {
    state.result = 'forfeit';
    return { state, reward: config.invalid_reward, done: true, message: `No action: ${problem}. The hand is forfeited.` };
  },

  metrics: (state) => ({
    win: state.result === 'win' ? 1 : 0,
    draw: state.result === 'draw' ? 1 : 0,
    loss: state.result === 'loss' || state.result === 'bust' || state.result === 'forfeit' ? 1 : 0,
    bust: state.result === 'bust' ? 1 : 0,
    player_sum: sumHand(state.player),
  }),
};

/** The `blackjack` environment: {@link blackjackGame} played by Clotho's game loop. */
export default defineGame(blackjackGame);
