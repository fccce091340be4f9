import { describe, expect, it } from 'vitest';
import { InferenceError } from './errors.js';
import type { Completion } from './types.js';
import { oldestWeightsVersion, stampWeightsVersion, WEIGHTS_VERSION_HEADER, weightsVersionOf } from './weights-version.js';

const headers = (value?: string) => new Headers(value === undefined ? {} : { [WEIGHTS_VERSION_HEADER]: value });
const completion: Completion = {
  text: 'a',
  message: { role: 'assistant', content: 'a' },
  finishReason: 'stop',
  promptTokenIds: [1],
  tokenIds: [2],
  logprobs: [-1],
};

describe('weights versions', () => {
  it('reads the header when the server sends one, and refuses one that is not a version', () => {
    expect(weightsVersionOf(headers('7'))).toBe(7);
    expect(weightsVersionOf(headers('0'))).toBe(0);
    expect(weightsVersionOf(headers())).toBeUndefined();
    for (const bad of ['-1', '1.5', 'v2', '', '99999999999999999999']) {
      expect(() => weightsVersionOf(headers(bad)), bad).toThrow(InferenceError);
    }
    expect(stampWeightsVersion([completion], headers('3'))).toEqual([{ ...completion, weightsVersion: 3 }]);
    expect(stampWeightsVersion([completion], headers())).toEqual([completion]);
  });

  it('takes the oldest known version: the oldest policy that produced any token', () => {
    expect(oldestWeightsVersion([4, undefined, 2, 3])).toBe(2);
    expect(oldestWeightsVersion([undefined, 0, 5])).toBe(0);
    expect(oldestWeightsVersion([undefined, undefined])).toBeUndefined();
    expect(oldestWeightsVersion([])).toBeUndefined();
  });
});
