import type { GameCommand } from '../../src/kits/games/moves.js';
import type { Responder, ScriptedChoice } from './scripted-openai.js';

/**
 * A scripted player for the game environments. It knows, by the first user message (the game's first observation),
 * the plan of each Taxi and adventure episode it will meet, and plays blackjack by the rule "hit below 17" read from
 * the last observation. On a fresh turn with n choices, choice 0 is careful and the others sloppy: the careful player
 * acts by OpenAI tool calls from its first turn; a sloppy one first writes a reply without an action, then plays the
 * same moves as text commands.
 */

export const CAREFUL = 'Plan A.';
export const SLOPPY = 'Plan B. Let me think about this first.';

type Msg = { role: string; content?: unknown };
const text = (m: Msg | undefined) => String(m?.content ?? '');
export const commandText = (c: GameCommand) => [c.name, ...Object.values(c.arguments).map(String)].join(' ');

/** Blackjack's basic rule of thumb: hit while the hand is below 17. */
export function blackjackMove(observation: string): GameCommand {
  const sums = [...observation.matchAll(/\(sum (\d+)/g)];
  if (sums.length === 0) throw new Error(`no hand in ${JSON.stringify(observation)}`);
  return { name: Number(sums.at(-1)![1]) < 17 ? 'hit' : 'stick', arguments: {} };
}

/** The scripted player: `plans` maps an episode's first observation to its moves; other episodes are blackjack. */
export function gamePlayer(plans: Map<string, GameCommand[]>): Responder {
  return (body) => {
    const messages = ('messages' in body ? body.messages : []) as Msg[];
    const opening = text(messages.find((m) => m.role === 'user'));
    const assistants = messages.filter((m) => m.role === 'assistant');
    const reply = (sloppy: boolean): ScriptedChoice => {
      if (sloppy && assistants.length === 0) return { text: SLOPPY };
      const played = sloppy ? assistants.length - 1 : assistants.length;
      const plan = plans.get(opening);
      const move = plan ? plan[played] : blackjackMove(text(messages.at(-1)));
      if (!move) throw new Error(`the plan of ${JSON.stringify(opening.slice(0, 60))} has no move ${played}`);
      if (sloppy) return { text: `I will ${commandText(move)}.\n${commandText(move)}` };
      const call = { id: `call_${played}`, type: 'function', function: { name: move.name, arguments: JSON.stringify(move.arguments) } };
      return { text: played === 0 ? CAREFUL : '', toolCalls: [call] };
    };
    const first = assistants[0];
    if (first) return { choices: [reply(text(first).startsWith(SLOPPY))] };
    return { choices: Array.from({ length: body.n ?? 1 }, (_, i) => reply(i > 0)) };
  };
}
