import { Ajv, type ValidateFunction } from 'ajv';
import { z } from 'zod';
import type { Liveness, MaybePromise } from './define.js';
import type { ToolCallRequest } from '../inference/tool-calls.js';

export { parseToolCalls, type MalformedToolCall, type ToolCallRequest } from '../inference/tool-calls.js';

/**
 * What a tool sees besides its arguments. `State` is the environment's state slot as the tool reads it (a tool that
 * names none may read and change any).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a tool that does not name the state it keeps fits any environment's (public API)
export interface ToolContext<Item = unknown, State = any> extends Liveness {
  item: Item;
  /** The trajectory's state slot; a tool may change it (assign or mutate), and the change is stored durably. JSON-safe. */
  state: State;
  /** What the group's `setup` returned (null without setup). */
  group: unknown;
  /** The sample's index in its group, the turn and the call's place in that turn. */
  sample: number;
  turn: number;
  call: number;
  /**
   * Unique per episode, turn and call, and the same on every attempt. Clotho never runs a call whose result it
   * recorded; a call interrupted between its effect and that record (its worker killed) runs again with this key. A
   * tool with side effects honours it as a payment API does: keep the keys it acted on with their results and answer
   * a repeat from there, or send it to the service (an `Idempotency-Key` header; MCP calls carry it in `_meta`).
   */
  idempotencyKey: string;
}

/**
 * A tool the model can call and Clotho executes, each call as its own activity. Throw {@link ToolError} for an error
 * the model should see (bad input, nothing found); any other exception is an infrastructure failure, retried by the
 * `tool` step's policy and, when retries run out, the group's failure — never a reward.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- defaults for a list of tools of different arguments, items and states (`unknown` would refuse their `execute`)
export interface Tool<Args = any, Item = any, State = any> {
  name: string;
  description: string;
  /** The arguments: a zod schema (validated and converted to JSON Schema) or a JSON Schema object. */
  parameters: z.ZodType<Args> | Record<string, unknown>;
  /** Runs the call; a string or a JSON-safe object becomes the tool message. Throw {@link ToolError} for a failure the model should see. */
  execute(args: Args, context: ToolContext<Item, State>): MaybePromise<string | Record<string, unknown>>;
}

/**
 * Declares a tool; the identity function that types `execute`'s arguments from `parameters`. Its item and state types
 * come from `execute`'s context where it names them (`ctx: ToolContext<MyItem, MyState>`).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a tool that does not name its item or state type fits any environment
export function defineTool<S extends z.ZodType, Item = any, State = any>(tool: {
  name: string;
  description: string;
  parameters: S;
  /** Runs the call with the arguments parsed by the schema; as {@link Tool.execute}. */
  execute(args: z.infer<S>, context: ToolContext<Item, State>): MaybePromise<string | Record<string, unknown>>;
}): Tool<z.infer<S>, Item, State>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a tool that does not name its item or state type fits any environment
export function defineTool<Item = any, State = any>(
  tool: Tool<Record<string, unknown>, Item, State>,
): Tool<Record<string, unknown>, Item, State>;
export function defineTool(tool: Tool): Tool {
  return tool;
}

/** An error the model sees as the tool's answer (as every tool-calling API reports a tool's failure). */
export class ToolError extends Error {
  override name = 'ToolError';
}

/** Whether an offered tool is executable (has `execute`) rather than a definition to render. */
export function isTool(offer: unknown): offer is Tool {
  return typeof offer === 'object' && offer !== null && typeof (offer as Tool).execute === 'function';
}

const isZod = (schema: unknown): schema is z.ZodType => typeof schema === 'object' && schema !== null && '_zod' in schema;

/** The JSON Schema of a tool's arguments. */
export function parametersSchema(tool: Tool): Record<string, unknown> {
  const parameters = tool.parameters;
  if (!isZod(parameters)) return parameters as Record<string, unknown>;
  const { $schema: _, ...schema } = z.toJSONSchema(parameters, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return schema;
}

/** A tool as OpenAI's `tools` list (and every chat template) expects it. */
export function toOpenAITool(offer: Tool | Record<string, unknown>): Record<string, unknown> {
  if (!isTool(offer)) return offer;
  return { type: 'function', function: { name: offer.name, description: offer.description, parameters: parametersSchema(offer) } };
}

const ajv = new Ajv({ allErrors: true, strict: false });
const compiled = new WeakMap<object, ValidateFunction>();

/** Checks arguments against a tool's schema; the problems, one line each, or an empty list. */
export function argumentProblems(tool: Tool, args: Record<string, unknown>): string[] {
  const parameters = tool.parameters;
  if (isZod(parameters)) {
    const result = parameters.safeParse(args);
    return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`);
  }
  let validate = compiled.get(parameters);
  if (!validate) compiled.set(parameters, (validate = ajv.compile(parameters)));
  if (validate(args)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath.slice(1).replaceAll('/', '.') || 'arguments'}: ${e.message ?? 'invalid'}`);
}

/** How a call ended, as metrics count it. */
export type ToolCallOutcome = 'ok' | 'tool_error' | 'unknown_tool' | 'invalid_arguments';

/** One executed call: the text the model sees as the tool's message, and how the call ended. */
export interface ToolCallResult {
  content: string;
  outcome: ToolCallOutcome;
}

/**
 * Runs one call against the offered tools. Unknown names, arguments that fail the schema and {@link ToolError}s
 * become answers the model sees; any other exception propagates (an infrastructure failure).
 */
export async function executeToolCall(tools: readonly Tool[], call: ToolCallRequest, context: ToolContext): Promise<ToolCallResult> {
  const tool = tools.find((t) => t.name === call.name);
  if (!tool) {
    return { outcome: 'unknown_tool', content: `Error: unknown tool "${call.name}"; available: ${tools.map((t) => t.name).join(', ')}` };
  }
  const problems = argumentProblems(tool, call.arguments);
  if (problems.length > 0)
    return { outcome: 'invalid_arguments', content: `Error: invalid arguments for ${tool.name}: ${problems.join('; ')}` };
  const args = isZod(tool.parameters) ? tool.parameters.parse(call.arguments) : call.arguments;
  try {
    const output = await tool.execute(args, context);
    return { outcome: 'ok', content: typeof output === 'string' ? output : JSON.stringify(output) };
  } catch (error) {
    if (error instanceof ToolError || (error as Error)?.name === 'ToolError')
      return { outcome: 'tool_error', content: `Error: ${(error as Error).message}` };
    throw error;
  }
}
