import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { loadJsonl, resolveDataset, z, type Message } from 'clotho';
import type { BfclFunction, BfclSchema, ExpectedCall } from './checker.js';

/** The BFCL categories this environment serves, in BFCL's names. */
export const CATEGORIES = ['simple', 'multiple', 'parallel', 'parallel_multiple'] as const;
export type Category = (typeof CATEGORIES)[number];

/** Each category's file, the same name in the data folder and in its `possible_answer/`. */
export const CATEGORY_FILES: Record<Category, string> = {
  simple: 'BFCL_v4_simple_python.json',
  multiple: 'BFCL_v4_multiple.json',
  parallel: 'BFCL_v4_parallel.json',
  parallel_multiple: 'BFCL_v4_parallel_multiple.json',
};

/** The public files (ShishirPatil/gorilla, Apache-2.0), pinned to the commit whose copies `data/` holds (see `data/README.md`). */
export const BFCL_DATA_URL =
  'https://raw.githubusercontent.com/ShishirPatil/gorilla/6ea57973c7a6097fd7c5915698c54c17c5b1b6c8/berkeley-function-call-leaderboard/bfcl_eval/data';

/** One BFCL task: the conversation to answer, the functions offered, and the calls that answer it. */
export interface ToolCallingItem {
  id: string;
  category: Category;
  /** The first turn's messages (these categories have one turn). */
  messages: Message[];
  functions: BfclFunction[];
  /** The functions as OpenAI-format tools, converted once at load so that a bad schema fails there. */
  tools: Record<string, unknown>[];
  expected: ExpectedCall[];
}

const FunctionShape = z.object({
  name: z.string().min(1),
  description: z.string().optional(),
  parameters: z.looseObject({ type: z.literal('dict'), properties: z.record(z.string(), z.looseObject({})).optional() }),
});
const QuestionRow = z.object({
  id: z.string(),
  question: z.array(z.array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() }))).min(1),
  function: z.array(FunctionShape).min(1),
});
const AnswerRow = z.object({
  id: z.string(),
  ground_truth: z
    .array(
      z
        .record(z.string(), z.record(z.string(), z.array(z.unknown())))
        .refine((call) => Object.keys(call).length === 1, 'each call must be {function_name: {param: [values]}}'),
    )
    .min(1),
});

// BFCL's type names as JSON Schema types; "any" has none (every value is allowed).
const JSON_TYPES: Record<string, string | null> = {
  dict: 'object',
  float: 'number',
  integer: 'integer',
  boolean: 'boolean',
  string: 'string',
  array: 'array',
  tuple: 'array',
  any: null,
};
// JSON Schema keywords kept as they are; BFCL's own (such as `optional`) are dropped.
const KEPT = [
  'description',
  'enum',
  'default',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
] as const;

/**
 * Converts a BFCL parameter schema to JSON Schema: BFCL's type names become JSON Schema's, objects and array items
 * are converted recursively, and `required`, `enum`, `description` and `default` are kept.
 * @throws Error naming the path of a type BFCL does not define
 */
export function toJsonSchema(schema: BfclSchema, path = 'parameters'): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (schema.type !== undefined) {
    const type = Object.hasOwn(JSON_TYPES, schema.type) ? JSON_TYPES[schema.type] : undefined;
    if (type === undefined) throw new Error(`${path}: unknown BFCL type "${schema.type}"`);
    if (type !== null) out.type = type;
  }
  for (const key of KEPT) if (schema[key] !== undefined) out[key] = schema[key];
  if (schema.properties) {
    out.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, sub]) => [name, toJsonSchema(sub, `${path}.${name}`)]),
    );
  }
  if (Array.isArray(schema.required)) out.required = schema.required;
  if (schema.items) out.items = toJsonSchema(schema.items, `${path}[]`);
  return out;
}

/** A BFCL function as an OpenAI-format tool, which chat templates render (Hermes `<tools>` for Qwen and Hermes). */
export function toOpenAITool(fn: BfclFunction): Record<string, unknown> {
  return { type: 'function', function: { name: fn.name, description: fn.description ?? '', parameters: toJsonSchema(fn.parameters) } };
}

// OpenAI's API allows only [a-zA-Z0-9_-] in a function name; BFCL replaces the dots for such models, and so do we.
const underscored = (name: string) => name.replaceAll('.', '_');

async function dataFile(dataDir: string | null, name: string): Promise<string> {
  if (dataDir !== null) {
    const path = join(dataDir, name);
    const found = await access(path).then(
      () => true,
      () => false,
    );
    if (!found) throw new Error(`BFCL file not found: ${path} (--env.data_dir must hold BFCL_v4_*.json and possible_answer/)`);
    return path;
  }
  try {
    return await resolveDataset({ cacheName: `bfcl/${name}`, url: `${BFCL_DATA_URL}/${name}` });
  } catch (error) {
    const reason = (error as Error).message.split('; pass --env.')[0];
    throw new Error(`${reason}; pass --env.data_dir <folder with BFCL_v4_*.json and possible_answer/> to use a local copy`);
  }
}

/**
 * Loads one category: questions joined with their possible answers by id. Without a folder, the public files are
 * downloaded once into Clotho's dataset cache (`bfcl/` there, laid out like the folder).
 * @throws Error naming the file and line of a malformed row, or the id of a question without an answer
 */
export async function loadCategory(
  dataDir: string | null,
  category: Category,
  options: { underscoreNames?: boolean } = {},
): Promise<ToolCallingItem[]> {
  const file = CATEGORY_FILES[category];
  const questions = await loadJsonl(await dataFile(dataDir, file), QuestionRow);
  const answers = new Map((await loadJsonl(await dataFile(dataDir, `possible_answer/${file}`), AnswerRow)).map((row) => [row.id, row]));
  const rename = options.underscoreNames ? underscored : (name: string) => name;
  return questions.map((row) => {
    const answer = answers.get(row.id);
    if (!answer) throw new Error(`BFCL ${category}: no possible answer for ${row.id}`);
    const functions: BfclFunction[] = row.function.map((fn) => ({ ...fn, name: rename(fn.name), parameters: fn.parameters as BfclSchema }));
    const expected = answer.ground_truth.map((call) => {
      const [name, args] = Object.entries(call)[0]!;
      return { name: rename(name), arguments: args };
    });
    return { id: row.id, category, messages: row.question[0]!, functions, tools: functions.map(toOpenAITool), expected };
  });
}

/** Round-robin over lists (a, b, a, b, …, then the longer one's rest), so that any first n items mix the categories. */
export function interleave<T>(lists: readonly (readonly T[])[]): T[] {
  const out: T[] = [];
  const longest = Math.max(0, ...lists.map((list) => list.length));
  for (let i = 0; i < longest; i++) for (const list of lists) if (i < list.length) out.push(list[i]!);
  return out;
}
