/**
 * Reading the model's move in a game: an action is a tool the model may call or a command it may write, read from
 * one assistant message and checked against the action's parameters.
 */
import { z } from 'zod';
import { stripThinking } from '../../env/answers.js';
import { parametersSchema, parseToolCalls, type Tool, type ToolCallRequest } from '../../env/tools.js';

/** An action the model may take: a tool it may call and a command it may write (`take red key`). */
export interface GameAction {
  /** The tool's name and the command's verb (`hit`, `go`). */
  name: string;
  description: string;
  /**
   * The action's arguments as a zod object. In a text command the words after the verb are the first field's value
   * (`take red key` → `{ item: 'red key' }`), so a text-friendly action has at most one (string) field.
   */
  parameters?: z.ZodObject;
  /** Other verbs for it in text (`stand` for `stick`, `0` for Gymnasium's action id). */
  aliases?: string[];
  /** A whole command, shown in the rules (`go north`). @default the name, with `<field>` for an argument */
  example?: string;
}

/** An action read from the model's reply, its arguments checked. */
export interface GameCommand {
  name: string;
  arguments: Record<string, unknown>;
}

/** Why a reply is not an action, as the model is told. */
export interface Unreadable {
  problem: string;
}

/** What the model did this turn: called a tool (extra calls are not played), wrote a command, or neither. */
export type GameMove =
  { kind: 'call'; call: ToolCallRequest; extra: ToolCallRequest[] } | { kind: 'text'; text: string } | { kind: 'none'; problem: string };

/**
 * Reads one assistant message as a move: its first tool call (OpenAI `tool_calls` or a Hermes `<tool_call>` block),
 * else the text command — the last `<action>…</action>` if there is one, else the last non-empty line — after any
 * reasoning (`</think>`). Never throws: an empty reply, an unfinished `<think>` or a tool call whose JSON does not
 * parse is a move of kind `none`.
 */
export function readMove(message: { content?: unknown; tool_calls?: unknown }, idPrefix = 'call'): GameMove {
  const { calls, malformed } = parseToolCalls(message, idPrefix);
  if (calls.length > 0) return { kind: 'call', call: calls[0]!, extra: calls.slice(1) };
  if (malformed.length > 0) return { kind: 'none', problem: `the tool call did not parse (${malformed[0]!.error})` };
  const text = stripThinking(typeof message.content === 'string' ? message.content : '');
  if (text === null) return { kind: 'none', problem: 'the reply ended inside <think>' };
  const tagged = [...text.matchAll(/<action>([\s\S]*?)<\/action>/gi)].at(-1);
  const line = tagged
    ? tagged[1]!
    : (text
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .at(-1) ?? '');
  const command = normalise(line);
  return command === '' ? { kind: 'none', problem: 'the reply holds no action' } : { kind: 'text', text: command };
}

/** Lower case, single spaces, without markdown emphasis, quotes, a leading `action:` label or final punctuation. */
function normalise(text: string): string {
  return text
    .toLowerCase()
    .replace(/[*`"“”]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^(?:>\s*)?(?:(?:my |final )?(?:action|command|move)\s*[:=-]\s*)/, '')
    .replace(/^['‘’]+|['‘’.!?,;:]+$/g, '')
    .trim();
}

const fieldsOf = (action: GameAction): string[] => (action.parameters ? Object.keys(action.parameters.shape) : []);

/** Checks arguments against an action's parameters; a problem names the action. */
function checked(action: GameAction, args: Record<string, unknown>): GameCommand | Unreadable {
  if (!action.parameters) return { name: action.name, arguments: {} };
  const result = action.parameters.safeParse(args);
  if (result.success) return { name: action.name, arguments: result.data as Record<string, unknown> };
  return {
    problem: `invalid arguments for ${action.name}: ${result.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ')}`,
  };
}

/** Reads a text command (`take red key`, `Hit`) as one of the actions: the longest verb or alias it starts with. */
export function parseCommand(text: string, actions: readonly GameAction[]): GameCommand | Unreadable {
  const command = normalise(text);
  let best: { action: GameAction; verb: string } | undefined;
  for (const action of actions) {
    for (const verb of [action.name, ...(action.aliases ?? [])].map((v) => v.toLowerCase())) {
      const fits = command === verb || command.startsWith(`${verb} `);
      if (fits && verb.length > (best?.verb.length ?? -1)) best = { action, verb };
    }
  }
  if (!best) return { problem: `"${command}" is not an action (actions: ${actions.map((a) => a.name).join(', ')})` };
  const rest = command.slice(best.verb.length).trim();
  const [field] = fieldsOf(best.action);
  if (!field)
    return rest === '' ? { name: best.action.name, arguments: {} } : { problem: `${best.action.name} takes no argument, got "${rest}"` };
  return checked(best.action, rest === '' ? {} : { [field]: rest });
}

/** Reads a tool call as one of the actions, its arguments checked against the action's parameters. */
export function commandFromCall(
  call: { name: string; arguments: Record<string, unknown> },
  actions: readonly GameAction[],
): GameCommand | Unreadable {
  const action = actions.find((a) => a.name === call.name);
  if (!action) return { problem: `unknown action "${call.name}" (actions: ${actions.map((a) => a.name).join(', ')})` };
  return checked(action, call.arguments);
}

/** The actions as OpenAI-format tool definitions: offered to the model and rendered by the chat template, played by `step`. */
export function actionTools(actions: readonly GameAction[]): Record<string, unknown>[] {
  return actions.map((action) => {
    const parameters = parametersSchema({ parameters: action.parameters ?? z.object({}) } as unknown as Tool);
    return { type: 'function', function: { name: action.name, description: action.description, parameters } };
  });
}

/** How an action reads in the rules: `take <item>`. */
export const actionUsage = (action: GameAction): string =>
  [
    action.name,
    ...fieldsOf(action)
      .slice(0, 1)
      .map((f) => `<${f}>`),
  ].join(' ');
