import { compileRetryPolicy } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { retryPolicy } from './activity-options.js';

const step = { startToCloseTimeoutMs: 1000, initialIntervalMs: 10, backoffCoefficient: 2, maximumIntervalMs: 100, local: false };

describe('retryPolicy', () => {
  it('turns 0 attempts (unlimited, as configs say it) into no maximum, which the SDK accepts', () => {
    const policy = retryPolicy({ ...step, maximumAttempts: 0 });
    expect(policy).not.toHaveProperty('maximumAttempts');
    expect(() => compileRetryPolicy(policy)).not.toThrow();
  });

  it('keeps a positive maximum', () => {
    expect(compileRetryPolicy(retryPolicy({ ...step, maximumAttempts: 3 })).maximumAttempts).toBe(3);
  });
});
