import { z } from 'zod';

/**
 * Per-token number arrays checked by plain loops. zod checks a number in about 40 ns with its bookkeeping (and copies
 * each object it passes), and a group or a completion holds tens of thousands of them: token ids, masks, logprobs.
 * The loops accept a subset of what zod's `z.number().int()` and `z.number()` accept (safe integers, finite numbers),
 * so a schema that uses them in place of zod's arrays (a "hot" schema) passes only what its full schema passes, with
 * the same data; {@link parseHotFirst} asks the full schema whenever the hot one refuses, for its answer and the
 * error naming the field.
 */

/** An array of safe integers. */
export function isIntArray(value: unknown): value is number[] {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!Number.isSafeInteger(value[i])) return false;
  return true;
}

/** An array of finite numbers. */
export function isFloatArray(value: unknown): value is number[] {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!Number.isFinite(value[i])) return false;
  return true;
}

const rowsOf = (row: (value: unknown) => boolean) => (value: unknown) => {
  if (!Array.isArray(value)) return false;
  for (const r of value) if (!row(r)) return false;
  return true;
};

/** `number[]` of safe integers (token ids, masks). */
export const intArray = z.custom<number[]>(isIntArray);
/** `number[][]` of safe integers. */
export const intRows = z.custom<number[][]>(rowsOf(isIntArray));
/** `number[][]` of finite numbers (logprobs, advantages). */
export const floatRows = z.custom<number[][]>(rowsOf(isFloatArray));

/** An array of objects each with a finite `logprob` (OpenAI's `logprobs.content`), passed through as they are. */
export function isLogprobEntries(value: unknown): value is { logprob: number }[] {
  if (!Array.isArray(value)) return false;
  for (const entry of value) {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry) || !Number.isFinite((entry as { logprob?: unknown }).logprob))
      return false;
  }
  return true;
}

/** Records of finite numbers (`{ "<token id>": logprob }`), plain objects only. */
export function isNumberRecord(value: unknown): value is Record<string, number> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  for (const key in value) if (!Number.isFinite((value as Record<string, unknown>)[key])) return false;
  return true;
}

/**
 * Validates with `hot` first and, when it refuses, with `full`: the same data for any input `hot` accepts, and
 * `full`'s own answer for the rest.
 */
export function parseHotFirst<S extends z.ZodType>(hot: z.ZodType<z.output<S>>, full: S, value: unknown) {
  const fast = hot.safeParse(value);
  return fast.success ? fast : full.safeParse(value, { reportInput: true });
}
