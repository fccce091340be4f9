import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isFloatArray, isIntArray, isLogprobEntries, isNumberRecord, parseHotFirst } from './number-rows.js';

/** Numbers and what zod must refuse where numbers belong. */
const numberish = fc.oneof(
  { weight: 12, arbitrary: fc.integer({ min: -100, max: 150_000 }) },
  { weight: 12, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true, min: -30, max: 2 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(2 ** 53, -(2 ** 53), -0, 1.5, Number.NaN, Infinity, -Infinity, true, '7', null, undefined, [], {}),
  },
);
const array = fc.oneof(
  { weight: 8, arbitrary: fc.array(numberish, { maxLength: 6 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, 'x', { 0: 1 }) },
);
const entry = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record(
      { token: fc.string({ maxLength: 2 }), logprob: numberish, bytes: fc.constant(null) },
      { requiredKeys: ['logprob'] },
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(null, 3, [], { token: 'a' }) },
);
const record = fc.oneof(
  { weight: 8, arbitrary: fc.dictionary(fc.string({ maxLength: 3 }), numberish, { maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, [], 4) },
);

/** Each loop passes only what its zod schema passes, and zod then gives back the same value. */
function agrees(loop: (v: unknown) => boolean, schema: z.ZodType, values: fc.Arbitrary<unknown>) {
  let passed = 0;
  let refused = 0;
  fc.assert(
    fc.property(values, (value) => {
      const full = schema.safeParse(value);
      if (loop(value)) {
        passed++;
        expect(full).toEqual({ success: true, data: value });
      } else refused++;
    }),
    { numRuns: 3000 },
  );
  // Both branches were exercised.
  expect(passed).toBeGreaterThan(100);
  expect(refused).toBeGreaterThan(100);
}

describe('per-token number arrays checked by loops', () => {
  it('pass a subset of what zod passes, with the same data', () => {
    agrees(isIntArray, z.array(z.number().int()), array);
    agrees(isFloatArray, z.array(z.number()), array);
    agrees(
      isLogprobEntries,
      z.array(z.looseObject({ logprob: z.number() })),
      fc.oneof(fc.array(entry, { maxLength: 4 }), fc.constant(null)),
    );
    agrees(isNumberRecord, z.record(z.string(), z.number()), record);
  });

  it('take the usual values and refuse the near misses zod refuses too', () => {
    expect(isIntArray([1, -100, 0])).toBe(true);
    expect(isIntArray([1, 2 ** 53])).toBe(false);
    expect(isFloatArray([-0.5, 1])).toBe(true);
    expect(isFloatArray([-0.5, Infinity])).toBe(false);
    expect(isLogprobEntries([{ token: 'a', logprob: -0.1, top_logprobs: [] }])).toBe(true);
    expect(isLogprobEntries([{ token: 'a', logprob: '-0.1' }])).toBe(false);
    expect(isNumberRecord({ 17: -0.2 })).toBe(true);
    expect(isNumberRecord({ 17: null })).toBe(false);
  });

  it('leave the answer to the full schema when they refuse: its error names the field', () => {
    const hot = z.object({ ids: z.custom<number[]>(isIntArray) });
    const full = z.object({ ids: z.array(z.number().int()) });
    expect(parseHotFirst(hot, full, { ids: [1, 2] })).toEqual({ success: true, data: { ids: [1, 2] } });
    const refused = parseHotFirst(hot, full, { ids: [1, 2.5] });
    expect(refused.success).toBe(false);
    expect(refused.error?.issues.map((i) => i.path)).toEqual([['ids', 1]]);
  });
});
