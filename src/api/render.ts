import { SCORED_DATA_FIELDS } from '../schema/scored-data.js';
import { exactJson, FREE_FORM_FIELDS, hasExactNumbers } from './exact-json.js';

/**
 * JSON as Atropos writes it. Python's `json.dumps` writes a `float` with a decimal point (`1.0`) and an `int`
 * without (`1`), and a Python trainer receives them as those types; JS writes both as `1`. So fields Atropos types
 * as float are written here with the point, and free-form fields exactly as they were posted.
 */

/** `ScoredData` fields typed `List[float]` (or deeper lists of float) in Atropos. */
export const FLOAT_FIELDS = ['scores', 'advantages', 'ref_logprobs', 'inference_logprobs', 'distill_logprobs'] as const;

const FLOAT = new Set<string>(FLOAT_FIELDS);
const FREE_FORM = new Set<string>(FREE_FORM_FIELDS);
// A whole number between JSON delimiters: `JSON.stringify` writes every other number with `.` or `e`.
const WHOLE = /(?<=^|[[,:])(-?\d+)(?=$|[,\]}])/g;

/** JSON text of a number, or of (nested) arrays of numbers, each written as a Python float (`1.0`, never `1`). */
export function floatJson(value: unknown): string {
  return (JSON.stringify(value) ?? 'null').replace(WHOLE, '$1.0');
}

/** JSON text of any value, free-form numbers exactly as posted. */
function freeJson(value: unknown): string {
  return hasExactNumbers(value) ? exactJson(value) : (JSON.stringify(value) ?? 'null');
}

/** JSON text of a scored group: Atropos's 14 fields in its order, float fields as floats, free-form ones as posted. */
export function groupJson(group: object): string {
  const record = group as Record<string, unknown>;
  const members = SCORED_DATA_FIELDS.map((field) => {
    const value = record[field] ?? null;
    const text = FLOAT.has(field) ? floatJson(value) : FREE_FORM.has(field) ? freeJson(value) : JSON.stringify(value);
    return `${JSON.stringify(field)}:${text}`;
  });
  return `{${members.join(',')}}`;
}

/**
 * JSON text of an object whose `groups` members hold scored groups (or lists of them, or null) and whose `floats`
 * members are numbers Atropos computes as floats; every other member as `JSON.stringify` writes it.
 */
export function responseJson(
  body: Record<string, unknown>,
  { groups = [], floats = [] }: { groups?: string[]; floats?: string[] } = {},
): string {
  const members = Object.entries(body).flatMap(([key, value]) => {
    if (value === undefined) return [];
    let text: string;
    if (groups.includes(key)) {
      text = Array.isArray(value)
        ? `[${value.map((g: object) => groupJson(g)).join(',')}]`
        : value === null
          ? 'null'
          : groupJson(value as object);
    } else text = floats.includes(key) ? floatJson(value) : JSON.stringify(value);
    return [`${JSON.stringify(key)}:${text}`];
  });
  return `{${members.join(',')}}`;
}
