/**
 * Numbers as pydantic's lax mode takes them, for `POST /scored_data(_list)`: Atropos's API validates a group with
 * pydantic, which turns `true`/`false` into 1/0 and numeric strings (`"0.5"`, `"7"`) into numbers in `int` and
 * `float` fields. A Python environment that appends a bool as a score is thus served by Atropos; here too, and the
 * group is counted as irregular (`numbers_coerced`). Only tried when a group fails strict validation.
 */

/** Number fields of `ScoredData` and how deep their numbers sit (0: the field itself). */
const INT_FIELDS: Record<string, number> = { tokens: 2, masks: 2, env_id: 0, distill_token_ids: 3 };
const FLOAT_FIELDS: Record<string, number> = { scores: 1, advantages: 2, ref_logprobs: 2, inference_logprobs: 2, distill_logprobs: 3 };
const INT_TEXT = /^\s*[-+]?\d+\s*$/;

/** The number pydantic would make of `value` in an int or float field, or `value` itself when it would make none. */
function lax(value: unknown, integer: boolean): unknown {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value !== 'string') return value;
  if (integer) return INT_TEXT.test(value) ? Number(value) : value;
  const number = value.trim() === '' ? Number.NaN : Number(value);
  return Number.isFinite(number) ? number : value;
}

/** `value` with every number at `depth` made lax; `changed.hit` is set when one was. */
function walk(value: unknown, depth: number, integer: boolean, changed: { hit: boolean }): unknown {
  if (depth === 0) {
    const next = lax(value, integer);
    if (next !== value) changed.hit = true;
    return next;
  }
  return Array.isArray(value) ? value.map((item) => walk(item, depth - 1, integer, changed)) : value;
}

function laxGroup(group: unknown): { group: unknown; coerced: boolean } {
  if (group === null || typeof group !== 'object' || Array.isArray(group)) return { group, coerced: false };
  const changed = { hit: false };
  const out: Record<string, unknown> = { ...(group as Record<string, unknown>) };
  for (const [field, depth] of Object.entries(INT_FIELDS)) if (field in out) out[field] = walk(out[field], depth, true, changed);
  for (const [field, depth] of Object.entries(FLOAT_FIELDS)) if (field in out) out[field] = walk(out[field], depth, false, changed);
  return { group: changed.hit ? out : group, coerced: changed.hit };
}

/**
 * A posted body (one group, or a list of them) with bools and numeric strings in number fields made numbers, and
 * which groups that changed; null when nothing changed (the body's failure lies elsewhere).
 */
export function laxNumbers(body: unknown): { body: unknown; coerced: boolean[] } | null {
  const groups = Array.isArray(body) ? body.map(laxGroup) : [laxGroup(body)];
  if (!groups.some((g) => g.coerced)) return null;
  return { body: Array.isArray(body) ? groups.map((g) => g.group) : groups[0]!.group, coerced: groups.map((g) => g.coerced) };
}
