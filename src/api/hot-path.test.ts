import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ScoredDataListPostSchema, ScoredDataPostSchema } from '../schema/api.js';
import { parseHotFirst } from '../schema/number-rows.js';
import { HotScoredDataListPostSchema, HotScoredDataPostSchema } from './hot-path.js';

/** Numbers and near-numbers a post may hold where numbers belong. */
const numberish = fc.oneof(
  fc.integer({ min: -5, max: 150_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -20, max: 2 }),
  fc.constantFrom(2 ** 53, -0, 1.5, true, '7', null),
);
/** Rows of `lengths` (or of one more row, misaligned); values mostly numbers, now and then something else. */
const rowsLike = (lengths: number[], value: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.tuple(...lengths.map((n) => fc.array(value, { minLength: n, maxLength: n }))) },
    { weight: 1, arbitrary: fc.array(fc.array(value, { maxLength: 3 }), { maxLength: lengths.length + 1 }) },
  );
const mostlyInts = fc.oneof({ weight: 20, arbitrary: fc.integer({ min: -100, max: 150_000 }) }, { weight: 1, arbitrary: numberish });
const mostlyFloats = fc.oneof(
  { weight: 20, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true, min: -20, max: 2 }) },
  { weight: 1, arbitrary: numberish },
);
const post = fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 0, maxLength: 3 }).chain((lengths) =>
  fc.record(
    {
      tokens: rowsLike(lengths, mostlyInts),
      masks: rowsLike(lengths, mostlyInts),
      scores: fc.array(mostlyFloats, { minLength: lengths.length, maxLength: lengths.length }),
      inference_logprobs: fc.oneof(rowsLike(lengths, mostlyFloats), fc.constant(null)),
      advantages: fc.oneof(rowsLike(lengths, mostlyFloats), fc.constant(null)),
      ref_logprobs: fc.oneof(rowsLike([...lengths, 1], mostlyFloats), fc.constant(null)),
      env_id: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant(null)),
      idempotency_key: fc.string({ maxLength: 3 }),
      extra: fc.string(),
    },
    { requiredKeys: ['tokens', 'masks', 'scores'] },
  ),
);

describe('validation of posted groups on the hot path', () => {
  it('gives the full schema’s answer for every post: the same data when it passes, its errors when not', () => {
    let passed = 0;
    fc.assert(
      fc.property(post, (value) => {
        const full = ScoredDataPostSchema.safeParse(value, { reportInput: true });
        const hot = HotScoredDataPostSchema.safeParse(value);
        // The loops never pass what the full schema refuses, and pass the same data when both pass.
        if (hot.success) expect(full).toEqual({ success: true, data: hot.data });
        if (hot.success) passed++;
        expect(parseHotFirst(HotScoredDataPostSchema, ScoredDataPostSchema, value)).toEqual(full);
      }),
      { numRuns: 2000 },
    );
    // Both branches were exercised: posts the loops take, and posts left to the full schema.
    expect(passed).toBeGreaterThan(200);
    expect(passed).toBeLessThan(1800);
  });

  it('takes the usual post (aligned rows of integers and floats) without the full schema, and a list of them', () => {
    const group = { tokens: [[1, 2, 3]], masks: [[-100, 2, 3]], scores: [1], inference_logprobs: [[1, -0.5, -0.25]], env_id: 0 };
    expect(HotScoredDataPostSchema.safeParse(group).success).toBe(true);
    expect(HotScoredDataListPostSchema.safeParse([group, group]).success).toBe(true);
    expect(parseHotFirst(HotScoredDataListPostSchema, ScoredDataListPostSchema, [group])).toEqual(
      ScoredDataListPostSchema.safeParse([group]),
    );
  });

  it('keeps the alignment checks: masks of another length are refused, naming the row', () => {
    const misaligned = { tokens: [[1, 2, 3]], masks: [[1, 2]], scores: [1] };
    expect(HotScoredDataPostSchema.safeParse(misaligned).success).toBe(false);
    const answer = parseHotFirst(HotScoredDataPostSchema, ScoredDataPostSchema, misaligned);
    expect(answer.success).toBe(false);
    expect(answer.error?.issues.map((i) => [i.path, i.message])).toEqual([[['masks', 0], 'expected 3 values as in tokens[0], got 2']]);
  });
});
