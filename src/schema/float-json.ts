/**
 * JSON as Atropos writes it. Python's `json.dumps` writes a `float` with a decimal point (`1.0`) and an `int`
 * without (`1`), and a Python trainer receives them as those types; JS writes both as `1`. So fields Atropos types
 * as float are written with the point.
 */

/** `ScoredData` fields typed `List[float]` (or deeper lists of float) in Atropos. */
export const FLOAT_FIELDS = ['scores', 'advantages', 'ref_logprobs', 'inference_logprobs', 'distill_logprobs'] as const;

const FLOAT = new Set<string>(FLOAT_FIELDS);
// A whole number between JSON delimiters: `JSON.stringify` writes every other number with `.` or `e`.
const WHOLE = /(?<=^|[[,:])(-?\d+)(?=$|[,\]}])/g;

/** JSON text of a number, or of (nested) arrays of numbers, each written as a Python float (`1.0`, never `1`). */
export function floatJson(value: unknown): string {
  return (JSON.stringify(value) ?? 'null').replace(WHOLE, '$1.0');
}

/**
 * One line of a `process` run's JSONL: the group as the store holds it, every field kept, in compact JSON, with the
 * float fields written as floats (an environment's score 1.0 stays `1.0`, as Atropos's JSONL has it). `clotho view`
 * matches a line to the store's group by the same function.
 */
export function jsonlLine(group: unknown): string {
  if (typeof group !== 'object' || group === null || Array.isArray(group)) return JSON.stringify(group);
  const fields = Object.entries(group).flatMap(([key, value]) => {
    // As JSON.stringify does, a field holding undefined is left out.
    if (value === undefined) return [];
    return [`${JSON.stringify(key)}:${FLOAT.has(key) ? floatJson(value) : JSON.stringify(value)}`];
  });
  return `{${fields.join(',')}}`;
}
