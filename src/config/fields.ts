import { z } from 'zod';

/** The parts of a field's JSON Schema that config reads: its kind, bounds, default and description. */
export type Json = {
  type?: string | string[];
  anyOf?: Json[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
};

export function jsonSchema(schema: z.ZodType): Json {
  try {
    return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;
  } catch {
    return {}; // e.g. a recursive schema: zod alone validates it, help shows no type
  }
}
// A nullable field is `anyOf [T, null]` or `type: [t, "null"]`; its kind is T's.
function core(json: Json): Json & { type?: string } {
  const inner = json.anyOf?.find((branch) => branch.type !== 'null') ?? json;
  return { ...inner, type: Array.isArray(inner.type) ? inner.type.find((t) => t !== 'null') : inner.type };
}
const isNullable = (json: Json): boolean =>
  (json.anyOf?.some((branch) => branch.type === 'null') ?? false) || (Array.isArray(json.type) && json.type.includes('null'));

/** A field's JSON kind (`boolean`, `integer`, …), null left aside. */
export const kindOf = (schema: z.ZodType): string | undefined => core(jsonSchema(schema)).type;

/** What a field accepts, in words: "a positive integer", "one of a, b", "a number between 0 and 1 or None". */
export function expectation(schema: z.ZodType): string {
  const json = jsonSchema(schema);
  const c = core(json);
  let text: string;
  if (c.enum) text = `one of ${c.enum.join(', ')}`;
  else if (c.const !== undefined) text = `exactly ${JSON.stringify(c.const)}`;
  else if (c.type === 'boolean') text = 'true or false';
  else if (c.type === 'integer' || c.type === 'number') {
    const noun = c.type === 'integer' ? 'integer' : 'number';
    // `.int()` bounds an integer to the safe range; that is not worth saying.
    const max = c.maximum !== undefined && c.maximum < Number.MAX_SAFE_INTEGER ? c.maximum : undefined;
    const min = c.minimum !== undefined && c.minimum > Number.MIN_SAFE_INTEGER ? c.minimum : undefined;
    if (c.exclusiveMinimum === 0 && max === undefined) text = `a positive ${noun}`;
    else if (min === 0 && max === undefined) text = `a non-negative ${noun}`;
    else if (min !== undefined && max !== undefined) text = `${noun === 'integer' ? 'an' : 'a'} ${noun} between ${min} and ${max}`;
    else {
      const bounds = [
        min !== undefined ? `>= ${min}` : '',
        c.exclusiveMinimum !== undefined ? `> ${c.exclusiveMinimum}` : '',
        max !== undefined ? `<= ${max}` : '',
        c.exclusiveMaximum !== undefined ? `< ${c.exclusiveMaximum}` : '',
      ].filter(Boolean);
      text = `${noun === 'integer' ? 'an' : 'a'} ${noun} ${bounds.join(' and ')}`.trim();
    }
  } else if (c.type === 'string') text = c.pattern ? `a string matching /${c.pattern}/` : 'a string';
  else text = c.type ? `a valid ${c.type}` : 'a valid value';
  return isNullable(json) ? `${text} or None` : text;
}

/** Turns a flag's text into the field's type; anything that does not fit is left for zod to report. */
export function coerce(value: string | null, schema: z.ZodType | undefined): unknown {
  if (value === null || !schema) return value;
  const kind = kindOf(schema);
  if (kind === 'integer' || kind === 'number') return value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
  if (kind === 'boolean') return value === 'true' ? true : value === 'false' ? false : value;
  if (kind === 'array' || kind === 'object') {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}
