import { playEpisode, resolveEnvConfig, seededRandom, type GameCommand } from 'clotho';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import blackjack, { blackjackGame, type BlackjackState } from './blackjack.js';
import { cardValue, dealerPlays, handScore, isBust, isNatural, showdown, sumHand, usableAce, type Rank } from './cards.js';

const rank = fc.integer({ min: 1, max: 13 });
const hand = fc.array(rank, { minLength: 1, maxLength: 12 });

/** The best total by trying every ace as 1 or 11: the highest one not over 21, else the lowest. */
function bestTotal(cards: Rank[]): number {
  let totals = [0];
  for (const card of cards) totals = totals.flatMap((t) => (card === 1 ? [t + 1, t + 11] : [t + Math.min(card, 10)]));
  const fine = totals.filter((t) => t <= 21);
  return fine.length > 0 ? Math.max(...fine) : Math.min(...totals);
}

describe('blackjack rules (Gymnasium Blackjack-v1)', () => {
  it("values cards as Gymnasium's deck: ace 1, number cards their number, J Q K 10", () => {
    expect(Array.from({ length: 13 }, (_, i) => cardValue(i + 1))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10]);
  });

  it('counts one ace as 11 when that does not bust, and busts over 21', () => {
    fc.assert(
      fc.property(hand, (cards) => {
        expect(sumHand(cards)).toBe(bestTotal(cards));
        const hard = cards.reduce((s, c) => s + cardValue(c), 0);
        expect(usableAce(cards)).toBe(cards.includes(1) && hard + 10 <= 21);
        expect(sumHand(cards) - hard).toBe(usableAce(cards) ? 10 : 0);
        expect(isBust(cards)).toBe(sumHand(cards) > 21);
        expect(handScore(cards)).toBe(isBust(cards) ? 0 : sumHand(cards));
      }),
    );
    expect([sumHand([1, 1]), sumHand([1, 6]), sumHand([1, 6, 10]), sumHand([13, 12, 2])]).toEqual([12, 17, 17, 22]);
  });

  it('has the dealer draw to 17 and stand on any 17, soft or hard', () => {
    fc.assert(
      fc.property(fc.tuple(rank, rank), fc.array(rank, { minLength: 12, maxLength: 12 }), (start, deck) => {
        const cards = [...deck];
        const final = dealerPlays(start, () => cards.shift()!);
        expect(final.slice(0, 2)).toEqual(start);
        expect(sumHand(final)).toBeGreaterThanOrEqual(17);
        // It stopped at the first hand of 17 or more: one card fewer was below 17.
        if (final.length > 2) expect(sumHand(final.slice(0, -1))).toBeLessThan(17);
        else expect(sumHand(start)).toBeGreaterThanOrEqual(17);
      }),
    );
    expect(dealerPlays([1, 6], () => 5)).toEqual([1, 6]);
  });

  it('settles a showdown at −1, 0 or +1; 1.5 only for a winning natural with natural set; S&B natural rule under sab', () => {
    const rules = fc.record({ natural: fc.boolean(), sab: fc.boolean() });
    fc.assert(
      fc.property(hand, hand, rules, (player, dealer, r) => {
        const reward = showdown(player, dealer, r);
        const plain = Math.sign(handScore(player) - handScore(dealer));
        if (r.sab) expect(reward).toBe(isNatural(player) && !isNatural(dealer) ? 1 : plain);
        else if (r.natural && isNatural(player) && plain === 1) expect(reward).toBe(1.5);
        else expect(reward).toBe(plain);
        expect([-1, 0, 1, ...(r.natural && !r.sab ? [1.5] : [])]).toContain(reward);
      }),
    );
    const natural = [1, 13];
    expect(showdown(natural, [10, 7], { natural: true, sab: false })).toBe(1.5);
    expect(showdown(natural, [10, 7], { natural: false, sab: false })).toBe(1);
    expect(showdown(natural, [5, 6, 10], { natural: false, sab: false })).toBe(0); // 21 against 21
    expect(showdown(natural, [5, 6, 10], { natural: false, sab: true })).toBe(1); // a natural beats a drawn 21
    expect(showdown(natural, [12, 1], { natural: true, sab: true })).toBe(0);
    // The reverse does not hold in Gymnasium: a dealer's natural against a drawn 21 is a draw, under either rule.
    expect(showdown([10, 5, 6], [12, 1], { natural: true, sab: false })).toBe(0);
    expect(showdown([10, 5, 6], [12, 1], { natural: false, sab: true })).toBe(0);
  });
});

const config = resolveEnvConfig(blackjack, []);
const items = await blackjack.load(config);
const cmd = (name: string): GameCommand => ({ name, arguments: {} });

/** Plays moves through the game's own functions, as the loop does: the episode's generator threaded through. */
function play(seed: number, moves: ('hit' | 'stick' | '?')[], cfg = config) {
  const context = { seed, config: cfg, random: seededRandom(seed) };
  let state: BlackjackState = blackjackGame.start(context);
  const start = structuredClone(state);
  const rewards: number[] = [];
  for (const move of moves) {
    const outcome = move === '?' ? blackjackGame.unreadable(state, 'none', context) : blackjackGame.play(state, cmd(move), context);
    rewards.push(outcome.reward);
    state = outcome.state;
    if (outcome.done) return { start, state, rewards, done: true };
  }
  return { start, state, rewards, done: false };
}

describe('blackjack games', () => {
  const moves = fc.array(fc.constantFrom<'hit' | 'stick' | '?'>('hit', 'hit', 'stick', '?'), { minLength: 25, maxLength: 25 });

  it("deals from the episode's seed and ends every hand at a stick, a bust or a forfeit, with Blackjack-v1's rewards", () => {
    fc.assert(
      fc.property(fc.nat(), moves, fc.boolean(), fc.boolean(), (seed, script, natural, sab) => {
        const cfg = { ...config, natural, sab };
        const { start, state, rewards, done } = play(seed, script, cfg);
        const r = seededRandom(seed);
        expect(start).toEqual({ dealer: [1 + r.int(13), 1 + r.int(13)], player: [1 + r.int(13), 1 + r.int(13)], result: null });
        expect(done).toBe(true);
        const last = script[rewards.length - 1];
        // Only the last action is rewarded: hits that do not bust earn 0.
        expect(rewards.slice(0, -1).every((x) => x === 0)).toBe(true);
        const total = rewards.at(-1)!;
        expect(state.dealer[0]).toBe(start.dealer[0]);
        expect(state.player.slice(0, 2)).toEqual(start.player);
        expect(state.player.length - 2).toBe(script.slice(0, rewards.length).filter((m) => m === 'hit').length);
        if (last === '?') expect([state.result, total]).toEqual(['forfeit', -1]);
        if (last === 'hit') expect([state.result, total, isBust(state.player)]).toEqual(['bust', -1, true]);
        if (last === 'stick') {
          expect(isBust(state.player)).toBe(false);
          expect(sumHand(state.dealer)).toBeGreaterThanOrEqual(17);
          expect(total).toBe(showdown(state.player, state.dealer, cfg));
          expect(state.result).toBe(total > 0 ? 'win' : total < 0 ? 'loss' : 'draw');
        }
        expect([-1, 0, 1, ...(natural && !sab ? [1.5] : [])]).toContain(total);
      }),
      { numRuns: 500 },
    );
  });

  it('plays scripted episodes end to end with exact rewards', async () => {
    // Item 0: the cards drawn from its seed decide each outcome, computed here from the rules.
    const item = items.get(0);
    const r = seededRandom(item.seed);
    const draw = () => 1 + r.int(13);
    const dealer = [draw(), draw()];
    const player = [draw(), draw(), draw()];
    const hitThenStick = await playEpisode(blackjack, { item, replies: ['Hit.', '<action>stick</action>'] });
    const bust = isBust(player);
    const expected = bust ? -1 : showdown(player, dealerPlays(dealer, draw), config);
    expect(hitThenStick.score).toBe(expected);
    expect(hitThenStick.turns).toBe(bust ? 1 : 2);
    expect(hitThenStick.metrics).toMatchObject({ steps: bust ? 1 : 2, invalid_actions: 0, finished: 1, bust: bust ? 1 : 0 });

    const forfeit = await playEpisode(blackjack, { item, replies: ['I fold'] });
    expect(forfeit).toMatchObject({ score: -1, turns: 1, metrics: { invalid_actions: 1, loss: 1, finished: 1 } });
    expect(forfeit.messages.at(-1)!.content).toBe(
      'No action: "i fold" is not an action (actions: stick, hit). The hand is forfeited.\nReward -1, total -1.\n\nThe game is over.',
    );
  });

  it('pays a natural by the rules chosen: +1 by default (sab), 1.5 with --env.natural --env.sab false', async () => {
    // The first item whose player is dealt a natural and whose dealer is not.
    let index = 0;
    const dealt = (i: number) => blackjackGame.start({ seed: items.get(i).seed, config, random: seededRandom(items.get(i).seed) });
    while (!(isNatural(dealt(index).player) && !isNatural(dealt(index).dealer))) index++;
    const item = items.get(index);
    const stick = {
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 't', type: 'function', function: { name: 'stick', arguments: '{}' } }],
    };
    const sab = await playEpisode(blackjack, { item, replies: [stick] });
    expect(sab.score).toBe(1);
    expect(sab.messages[1]!.content).toMatch(/^Your cards: (A, [10JQK]|[10JQK], A) \(sum 21, usable ace\)\. The dealer shows /);
    const casino = await playEpisode(blackjack, { item, replies: [stick], argv: ['--env.natural', '--env.sab', 'false'] });
    const dealer = play(item.seed, ['stick']).state.dealer;
    expect(casino.score).toBe(sumHand(dealer) === 21 ? 0 : 1.5);
    expect(casino.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 't', name: 'stick' });
  });
});
