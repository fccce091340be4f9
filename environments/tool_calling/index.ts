import { defineEnvironment, fromItems, z, type ToolCallRequest } from 'clotho';
import { CATEGORIES, interleave, loadCategory, type ToolCallingItem } from './bfcl.js';
import { checkCalls } from './checker.js';

export type { ToolCallingItem } from './bfcl.js';

/** What `parse` keeps of a completion: the calls made and how many tool-call blocks did not parse. */
export interface ParsedCalls {
  calls: ToolCallRequest[];
  malformed: number;
}

export const SYSTEM_PROMPT =
  'You can call the functions offered to you. Answer the request by calling the right function or functions with ' +
  'the right arguments: make every call the request needs, and no others.';

// "simple,parallel" from a flag, or a YAML list.
const Categories = z
  .union([
    z.string().transform((text) =>
      text
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    ),
    z.array(z.string()),
  ])
  .pipe(z.array(z.enum(CATEGORIES)).min(1));

/** BFCL's single-call and parallel tool-calling tasks, scored by BFCL's AST checker; +1 / −1, or partial credit. */
export default defineEnvironment({
  name: 'tool_calling',
  description:
    'Function calling on the Berkeley Function Calling Leaderboard (simple, multiple, parallel, parallel_multiple), scored like its AST checker',
  config: {
    data_dir: z
      .string()
      .nullable()
      .default(null)
      .describe('folder with BFCL_v4_*.json and possible_answer/; unset: download the public files into the cache'),
    categories: Categories.prefault(CATEGORIES.join(',')).describe(`comma-separated BFCL categories to serve (${CATEGORIES.join(', ')})`),
    partial_credit: z.boolean().default(false).describe('reward 2 * matched / max(expected calls, calls made) - 1 instead of +1 / -1'),
    underscore_names: z
      .boolean()
      .default(false)
      .describe("offer function names with '.' replaced by '_' (for APIs that allow only [a-zA-Z0-9_-])"),
  },
  defaults: { group_size: 16 },

  async load(config) {
    const options = { underscoreNames: config.underscore_names };
    const sets = await Promise.all([...new Set(config.categories)].map((category) => loadCategory(config.data_dir, category, options)));
    const items = interleave(sets);
    if (items.length === 0) throw new Error(`no BFCL items in categories ${config.categories.join(', ')}`);
    return fromItems(items);
  },

  prompt(item: ToolCallingItem) {
    const [first, ...rest] = item.messages;
    // One system message: templates that render tools put them into it, and some accept only one.
    if (first?.role === 'system') return [{ role: 'system', content: `${SYSTEM_PROMPT}\n\n${String(first.content)}` }, ...rest];
    return [{ role: 'system', content: SYSTEM_PROMPT }, ...item.messages];
  },

  // Rendered by the chat template, never executed: the calls themselves are the answer.
  tools: (item) => item.tools,

  parse: (_completion, _item, context): ParsedCalls => ({ calls: context.toolCalls, malformed: context.malformedToolCalls.length }),

  score({ item, parsed, config }) {
    const { correct, matched } = checkCalls(item.functions, parsed.calls, item.expected);
    // A block that did not parse is a call that matches nothing: BFCL fails an output it cannot decode.
    const made = parsed.calls.length + parsed.malformed;
    const accuracy = correct && parsed.malformed === 0 ? 1 : 0;
    const score = config.partial_credit ? (2 * matched) / Math.max(item.expected.length, made) - 1 : accuracy ? 1 : -1;
    return {
      score,
      metrics: {
        accuracy,
        [`accuracy_${item.category}`]: accuracy,
        malformed_tool_calls: parsed.malformed > 0 ? 1 : 0,
        no_tool_call: made === 0 ? 1 : 0,
      },
    };
  },
});
