import { SCORED_DATA_FIELDS } from '../schema/scored-data.js';
import { FLOAT_FIELDS, floatJson } from '../schema/float-json.js';
import { exactJson, FREE_FORM_FIELDS, hasExactNumbers } from './exact-json.js';

/**
 * JSON as Atropos writes it: fields Atropos types as float with the decimal point (`src/schema/float-json.ts`), and
 * free-form fields exactly as they were posted.
 */

export { floatJson } from '../schema/float-json.js';

const FLOAT = new Set<string>(FLOAT_FIELDS);
const FREE_FORM = new Set<string>(FREE_FORM_FIELDS);

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
