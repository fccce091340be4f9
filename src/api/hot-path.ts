import { z } from 'zod';
import { ScoredDataPostSchema } from '../schema/api.js';

/**
 * A faster first try at validating posted groups. zod checks a number in about 40 ns with its bookkeeping, and a
 * group of 8 × 2,048 tokens holds some 50,000 of them in `tokens`, `masks` and `inference_logprobs` alone: 2–3 ms
 * of the API's one thread per post. Here those per-token rows are checked by plain loops instead, everything else
 * (and the rows' alignment) by the same zod schema.
 *
 * The loops accept a subset of what the full schema accepts (arrays of safe integers, of finite numbers), so a group
 * they pass is one the full schema passes, unchanged. Anything they refuse goes through the full schema, whose
 * answer (data, or the 422 naming the field) is then the one used.
 */

/** Rows of safe integers (`number[][]`). */
function intRows(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const row of value) {
    if (!Array.isArray(row)) return false;
    for (let i = 0; i < row.length; i++) if (!Number.isSafeInteger(row[i])) return false;
  }
  return true;
}

/** Rows of finite numbers. */
function floatRows(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const row of value) {
    if (!Array.isArray(row)) return false;
    for (let i = 0; i < row.length; i++) if (!Number.isFinite(row[i])) return false;
  }
  return true;
}

const ints = z.custom<number[][]>(intRows);
const floats = z.custom<number[][]>(floatRows);

/** {@link ScoredDataPostSchema} with its per-token rows checked by loops; its refinements (alignment) kept. */
export const HotScoredDataPostSchema = ScoredDataPostSchema.safeExtend({
  tokens: ints,
  masks: ints,
  advantages: floats.nullable().default(null),
  ref_logprobs: floats.nullable().default(null),
  inference_logprobs: floats.nullable().default(null),
});

/** `POST /scored_data_list`'s body, its groups as {@link HotScoredDataPostSchema}. */
export const HotScoredDataListPostSchema = z.array(HotScoredDataPostSchema);

/**
 * Validates with `hot` first and, when it refuses, with `full`: the same data for any input `hot` accepts, and
 * `full`'s own answer for the rest.
 */
export function parseHotFirst<S extends z.ZodType>(hot: z.ZodType<z.output<S>>, full: S, value: unknown) {
  const fast = hot.safeParse(value);
  return fast.success ? fast : full.safeParse(value, { reportInput: true });
}
