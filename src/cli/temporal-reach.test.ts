import { ServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { isTemporalOutOfReach, whileTemporalOutOfReach } from './temporal-reach.js';

/** What grpc-js rejects with: an Error with a numeric code and its details. */
const grpcError = (code: number, details: string) => Object.assign(new Error(details), { code, details, metadata: {} });
const outOfReach = () =>
  new ServiceError('Failed to get Workflow execution history', { cause: grpcError(14, 'No connection established') });

describe('Temporal out of reach', () => {
  it('is a call that failed for want of a connection, not one the server answered with an error', () => {
    expect(isTemporalOutOfReach(outOfReach())).toBe(true);
    expect(isTemporalOutOfReach(grpcError(2, 'transport error'))).toBe(true);
    expect(isTemporalOutOfReach(grpcError(5, 'workflow not found'))).toBe(false);
    expect(isTemporalOutOfReach(grpcError(2, 'something else'))).toBe(false);
    expect(isTemporalOutOfReach(new Error('boom'))).toBe(false);
  });

  it('calls again until the server answers, telling once when it went and once when it came back', async () => {
    let calls = 0;
    const told: string[] = [];
    const answer = await whileTemporalOutOfReach(
      async () => {
        if (++calls < 4) throw outOfReach();
        return 'done';
      },
      { signal: new AbortController().signal, onOutage: () => told.push('out'), onBack: () => told.push('back'), maxDelayMs: 1 },
    );
    expect({ answer, calls, told }).toEqual({ answer: 'done', calls: 4, told: ['out', 'back'] });
  });

  it("throws any other failure at once, and the signal's reason once aborted", async () => {
    const other = new Error('not a connection');
    await expect(whileTemporalOutOfReach(() => Promise.reject(other), { signal: new AbortController().signal })).rejects.toBe(other);
    const abort = new AbortController();
    const reason = new Error('interrupted');
    const waiting = whileTemporalOutOfReach(
      () => {
        abort.abort(reason);
        return Promise.reject(outOfReach());
      },
      { signal: abort.signal },
    );
    await expect(waiting).rejects.toBe(reason);
  });
});
