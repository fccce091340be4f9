import { describe, expect, it } from 'vitest';
import adventureEnv, { adventureGame } from '../../environments/games/adventure.js';
import blackjackEnv, { blackjackGame } from '../../environments/games/blackjack.js';
import games, { type GamesItem } from '../../environments/games/index.js';
import { adventurePlan, taxiPlan } from '../../environments/games/solve.js';
import taxiEnv, { taxiGame } from '../../environments/games/taxi.js';
import { seededRandom } from '../../src/env/random.js';
import type { GameCommand } from '../../src/kits/games/moves.js';
import { resolveEnvConfig } from '../../src/env/testing.js';
import { loadTokenizer } from '../../src/inference/tokenizer.js';
import { MASKED, type Message, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { blackjackMove, CAREFUL, commandText, gamePlayer, SLOPPY } from '../support/game-models.js';
import { expectWellFormedSequence } from '../support/groups.js';
import { processEngineGroup, runEvaluate, runProcess, useScratch } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';

const text = (m: Message | undefined) => String(m?.content ?? '');
const opening = (messages: Message[]) => text(messages.find((m) => m.role === 'user'));

const GAMES = './environments/games/index.ts';
const config = resolveEnvConfig(games, []);
const items = await games.load(config);

/** Each episode's plan (Taxi and the adventure) and the return of playing it, by the episode's first observation. */
function plansOf(gameItems: GamesItem[]) {
  const plans = new Map<string, GameCommand[]>();
  for (const item of gameItems) {
    const first = opening(games.prompt(item, config));
    if (item.game === 'taxi') {
      const start = taxiGame.start({ seed: item.seed, config: resolveEnvConfig(taxiEnv, []), random: seededRandom(item.seed) });
      plans.set(
        first,
        taxiPlan(start).map((name) => ({ name, arguments: {} })),
      );
    }
    if (item.game === 'adventure') plans.set(first, adventurePlan(item.seed, resolveEnvConfig(adventureEnv, []))!);
  }
  return plans;
}

/** The careful player's blackjack return: hit below 17, then stick, the episode's generator threaded as the loop does. */
function blackjackReturn(item: GamesItem): { rewards: number[]; moves: string[] } {
  const context = { seed: item.seed, config: resolveEnvConfig(blackjackEnv, []), random: seededRandom(item.seed) };
  let state = blackjackGame.start(context);
  let observation = blackjackGame.observe(state, context);
  const rewards: number[] = [];
  const moves: string[] = [];
  for (;;) {
    const move = blackjackMove(observation);
    moves.push(move.name);
    const outcome = blackjackGame.play(state, move, context);
    rewards.push(outcome.reward);
    if (outcome.done) return { rewards, moves };
    state = outcome.state;
    observation = outcome.message;
  }
}

const scratch = useScratch('clotho-games-');

/** Trained spans are exactly the assistant turns: one span per assistant message, each ending with the model's end. */
function expectTrainedTurns(group: ScoredDataGroup, sample: number) {
  const spans = expectWellFormedSequence(group, sample);
  expect(spans).toHaveLength(group.messages![sample]!.filter((m) => m.role === 'assistant').length);
}

describe('games under clotho process and evaluate, against a scripted player', () => {
  it('process: each game played turn by turn, by tool calls and by text, scored by its exact return', async () => {
    const episodes = [0, 1, 2].map((i) => items.get(i));
    expect(episodes.map((e) => e.game)).toEqual(['blackjack', 'taxi', 'adventure']);
    const plans = plansOf(episodes);
    const scripted = scratch.closeAfter(await startScriptedOpenAI({ responder: gamePlayer(plans) }));
    const { groups } = await runProcess(
      [
        GAMES,
        '--env.total_steps',
        '3',
        '--env.group_size',
        '2',
        '--env.ensure_scores_are_not_same',
        'false',
        '--openai.base_url',
        scripted.baseUrl,
        '--store',
        scratch.path('store'),
      ],
      scratch.path('games.jsonl'),
      3,
    );
    // Every request offered the game's actions as tools.
    const offered = scripted.requests
      .filter((r) => r.path === '/v1/chat/completions')
      .map((r) => (r.body as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name).join(','));
    expect(new Set(offered)).toEqual(new Set(['stick,hit', 'south,north,east,west,pickup,dropoff', 'go,take,drop,unlock,look,inventory']));

    const byOpening = new Map(episodes.map((e) => [opening(games.prompt(e, config)), e]));
    for (const group of groups) {
      const episode = byOpening.get(opening(group.messages![0]!))!;
      expect(episode).toBeDefined();
      const [careful, sloppy] = group.messages!;
      const assistants = (messages: Message[]) => messages.filter((m) => m.role === 'assistant');
      const rewards = (messages: Message[]) => assistants(messages).map((m) => m.reward);
      expect(text(assistants(careful!)[0])).toBe(CAREFUL);
      expect(text(assistants(sloppy!)[0])).toBe(SLOPPY);
      // The careful player's calls are each answered by a tool message with the call's id; the sloppy player's text by user messages.
      const answers = careful!.filter((m) => m.role === 'tool');
      expect(answers.map((m) => m.tool_call_id)).toEqual(assistants(careful!).map((_, i) => `call_${i}`));
      expect(sloppy!.filter((m) => m.role === 'tool')).toEqual([]);
      expect(text(sloppy!.find((m) => m.role === 'user' && text(m).startsWith('No action')))).toMatch(
        /^No action: "plan b\. let me think about this first" is not an action/,
      );
      if (episode.game === 'blackjack') {
        const { rewards: expected, moves } = blackjackReturn(episode);
        expect(answers.map((m) => m.name)).toEqual(moves);
        expect(rewards(careful!)).toEqual(expected);
        expect(group.scores).toEqual([expected.at(-1), -1]); // the sloppy reply forfeits the hand
        expect(rewards(sloppy!)).toEqual([-1]);
      } else {
        const plan = plans.get(opening(careful!))!;
        const L = plan.length;
        expect(group.scores).toEqual([21 - L, 11 - L]);
        expect(rewards(careful!)).toEqual([...plan.slice(1).map(() => -1), 20]);
        expect(rewards(sloppy!)).toEqual([-10, ...plan.slice(1).map(() => -1), 20]);
        expect(
          assistants(sloppy!)
            .slice(1)
            .map((m) => text(m).split('\n').at(-1)),
        ).toEqual(plan.map(commandText));
        expect(text(careful!.at(-1))).toMatch(/The game is over\.$/);
      }
      for (const sample of [0, 1]) expectTrainedTurns(group, sample);
      expect(group.overrides).toBeNull(); // every episode ended by the game: none truncated
    }
  });

  it('evaluate: the adventure by path, one careful episode per item, its metrics exact', async () => {
    const adventureItems = await adventureEnv.load(resolveEnvConfig(adventureEnv, []));
    const episodes = [0, 1].map((i) => ({ ...adventureItems.get(i), game: 'adventure' as const }));
    const plans = plansOf(episodes);
    const scripted = scratch.closeAfter(await startScriptedOpenAI({ responder: gamePlayer(plans) }));
    const { metrics, stdout } = await runEvaluate(
      ['./environments/games/adventure.ts', '--items', '2', '--openai.base_url', scripted.baseUrl],
      scratch.path('adventure-evals'),
    );
    const lengths = episodes.map((e) => plans.get(opening(games.prompt(e, config)))!.length);
    // Rooms seen by the end of each plan, replayed through the rules.
    const visited = episodes.map((e) => {
      const context = { seed: e.seed, config: resolveEnvConfig(adventureEnv, []), random: seededRandom(e.seed) };
      let state = adventureGame.start(context);
      for (const command of plans.get(opening(games.prompt(e, config)))!) state = adventureGame.play(state, command, context).state;
      return adventureGame.metrics!(state, context).rooms_visited!;
    });
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(metrics).toEqual({
      items: 2,
      score: mean(lengths.map((l) => 21 - l)),
      steps: mean(lengths),
      invalid_actions: 0,
      finished: 1,
      timed_out: 0,
      won: 1,
      rooms_visited: expect.closeTo(mean(visited), 10),
    });
    expect(stdout).toContain('"won": 1');
  });
});

describe('games on the embedded engine', () => {
  it("process taxi: a random-weight model's replies are no actions, each penalised −10, and the run exits 0", async () => {
    const group = await processEngineGroup(
      ['./test/support/taxi-engine-env.ts', '--env.max_turns', '4', '--store', scratch.path('store')],
      scratch.path('engine-taxi.jsonl'),
      64,
    );
    const tokenizer = await loadTokenizer('qwen3');
    let penalised = 0;
    group.messages!.forEach((messages, sample) => {
      const stepped = messages.filter((m) => m.role === 'assistant' && typeof m.reward === 'number');
      const rewards = stepped.map((m) => m.reward!);
      // Random text is almost never a command; when it is (a stray "n" or "4"), it costs −1 or −10 like any action.
      for (const r of rewards) expect([-1, -10]).toContain(r);
      penalised += rewards.filter((r) => r === -10).length;
      expect(group.scores[sample]).toBe(rewards.reduce((a, b) => a + b, 0));
      for (const answer of messages.filter((m) => m.role === 'user').slice(1))
        expect(text(answer)).toMatch(/\nReward -(1|10), total -\d+\./);
      const masks = group.masks[sample]!;
      const prompt = tokenizer.decode(
        group.tokens[sample]!.slice(
          0,
          masks.findIndex((m) => m !== MASKED),
        ),
      );
      expect(prompt).toContain('<tools>');
      for (const name of ['south', 'north', 'east', 'west', 'pickup', 'dropoff']) expect(prompt).toContain(`"name": "${name}"`);
      // The group records the tools offered: its conversation re-renders with them as exactly the prompt the model saw
      // (without them the template writes no `# Tools` block: about half the tokens).
      const tools = (group as { tools?: Record<string, unknown>[] }).tools!;
      expect(tools.map((t) => (t.function as { name: string }).name).sort()).toEqual([
        'dropoff',
        'east',
        'north',
        'pickup',
        'south',
        'west',
      ]);
      const seen = group.tokens[sample]!.slice(
        0,
        masks.findIndex((m) => m !== MASKED),
      );
      const asked = messages.slice(
        0,
        messages.findIndex((m) => m.role === 'assistant'),
      );
      expect(tokenizer.encodeChat(asked, { addGenerationPrompt: true, tools })).toEqual(seen);
      expect(tokenizer.encodeChat(asked, { addGenerationPrompt: true }).length).toBeLessThan(seen.length);
      expectTrainedTurns(group, sample);
    });
    expect(penalised).toBeGreaterThan(0);
  });
});
