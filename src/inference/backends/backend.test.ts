import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TokenGenerateRequestSchema } from '../types.js';
import { parseTokenRequest } from './backend.js';

const sampling = { n: 2, maxTokens: 16, temperature: 1, topP: 1 };

describe('parseTokenRequest', () => {
  it('answers as the full schema does: the same request when it passes, InvalidRequest naming the field when not', () => {
    const id = fc.oneof(
      { weight: 20, arbitrary: fc.integer({ min: 0, max: 151_000 }) },
      { weight: 1, arbitrary: fc.constantFrom(-1, 1.5, 2 ** 53, Number.NaN, '3', null) },
    );
    let refused = 0;
    fc.assert(
      fc.property(fc.array(id, { maxLength: 5 }), (promptTokenIds) => {
        const request = { promptTokenIds, ...sampling };
        const full = TokenGenerateRequestSchema.safeParse(request);
        if (full.success) expect(parseTokenRequest(request)).toEqual(full.data);
        else {
          refused++;
          expect(() => parseTokenRequest(request)).toThrow(
            expect.objectContaining({ type: 'InvalidRequest', message: expect.stringContaining('promptTokenIds') }),
          );
        }
      }),
      { numRuns: 1000 },
    );
    expect(refused).toBeGreaterThan(50);
  });

  it('refuses keys the request does not have, as the strict full schema does', () => {
    expect(() => parseTokenRequest({ promptTokenIds: [1], ...sampling, extra: 1 })).toThrow(
      expect.objectContaining({ type: 'InvalidRequest' }),
    );
  });
});
