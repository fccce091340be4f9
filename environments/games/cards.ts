/**
 * Blackjack's rules as Gymnasium's `Blackjack-v1` has them (gymnasium/envs/toy_text/blackjack.py, Sutton & Barto's
 * example 5.1): an infinite deck, aces worth 1 or 11, the dealer draws to 17, and the rewards of `natural` and `sab`.
 * Pure functions over card ranks, so that the tests can check every rule by itself.
 */

/** A card's rank: 1 = ace, 2–10, 11 = jack, 12 = queen, 13 = king. Drawn uniformly: the deck is infinite. */
export type Rank = number;

const NAMES: Record<number, string> = { 1: 'A', 11: 'J', 12: 'Q', 13: 'K' };

/** How a card is shown: `A`, `7`, `K`. */
export const cardName = (rank: Rank): string => NAMES[rank] ?? String(rank);

/** Points of a card with an ace as 1: Gymnasium's deck `[1, 2, …, 9, 10, 10, 10, 10]`. */
export const cardValue = (rank: Rank): number => Math.min(rank, 10);

const hardSum = (hand: readonly Rank[]): number => hand.reduce((sum, rank) => sum + cardValue(rank), 0);

/** Whether one ace can count as 11 without busting. */
export const usableAce = (hand: readonly Rank[]): boolean => hand.some((rank) => rank === 1) && hardSum(hand) + 10 <= 21;

/** The hand's total, a usable ace counted as 11. */
export const sumHand = (hand: readonly Rank[]): number => hardSum(hand) + (usableAce(hand) ? 10 : 0);

/** Over 21 even with every ace counted as 1. */
export const isBust = (hand: readonly Rank[]): boolean => sumHand(hand) > 21;

/** What a hand scores at the showdown: its total, or 0 when bust. */
export const handScore = (hand: readonly Rank[]): number => (isBust(hand) ? 0 : sumHand(hand));

/** An ace and a ten-valued card, as the first two cards. */
export const isNatural = (hand: readonly Rank[]): boolean =>
  hand.length === 2 && hand.some((r) => r === 1) && hand.some((r) => cardValue(r) === 10);

/** Optional rules of `Blackjack-v1`. */
export interface BlackjackRules {
  /** A natural that wins pays 1.5 (ignored under `sab`). */
  natural: boolean;
  /** Sutton & Barto: a natural wins +1 unless the dealer has one too (a draw). */
  sab: boolean;
}

/** The dealer's final hand: draws while below 17, stands on any 17 (soft 17 included). */
export function dealerPlays(dealer: readonly Rank[], draw: () => Rank): Rank[] {
  const hand = [...dealer];
  while (sumHand(hand) < 17) hand.push(draw());
  return hand;
}

/** The reward of sticking with `player` against the dealer's final hand: −1, 0, +1, or 1.5 for a natural. */
export function showdown(player: readonly Rank[], dealer: readonly Rank[], rules: BlackjackRules): number {
  const reward = Math.sign(handScore(player) - handScore(dealer));
  if (rules.sab) return isNatural(player) && !isNatural(dealer) ? 1 : reward;
  return rules.natural && isNatural(player) && reward === 1 ? 1.5 : reward;
}
