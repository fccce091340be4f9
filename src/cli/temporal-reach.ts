import { isGrpcServiceError, ServiceError } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';

/** gRPC's status codes a frontend out of reach answers with: UNAVAILABLE (no connection), UNKNOWN ("transport error"). */
const UNAVAILABLE = 14;
const UNKNOWN = 2;

/**
 * Whether a call to Temporal failed because its frontend was out of reach (restarting, a network blip), so the same
 * call later may answer. The client retries such a call for a few seconds itself; a server restart takes longer.
 */
export function isTemporalOutOfReach(error: unknown): boolean {
  const grpc = error instanceof ServiceError && error.cause !== undefined ? error.cause : error;
  if (!isGrpcServiceError(grpc)) return false;
  return grpc.code === UNAVAILABLE || (grpc.code === UNKNOWN && /transport error/i.test(grpc.details));
}

export interface OutOfReachOptions {
  signal: AbortSignal;
  /** Told once per outage, when a call first fails for it. */
  onOutage?: (error: unknown) => void;
  /** Told once per outage, when a call answers again. */
  onBack?: (seconds: number) => void;
  /** The longest wait between calls. @default 5000 */
  maxDelayMs?: number;
}

/**
 * `call()`'s answer, calling it again (backing off from 250 ms) for as long as Temporal is out of reach: a command that
 * watches its run outlives a restart of the server, as its workers do. Any other failure is thrown, and an abort
 * throws the signal's reason.
 */
export async function whileTemporalOutOfReach<T>(call: () => Promise<T>, options: OutOfReachOptions): Promise<T> {
  let since: number | undefined;
  for (let delay = 250; ; delay = Math.min(delay * 2, options.maxDelayMs ?? 5_000)) {
    try {
      const answer = await call();
      if (since !== undefined) options.onBack?.((Date.now() - since) / 1000);
      return answer;
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason;
      if (!isTemporalOutOfReach(error)) throw error;
      if (since === undefined) {
        since = Date.now();
        options.onOutage?.(error);
      }
      await sleep(delay, undefined, { signal: options.signal }).catch(() => undefined);
      if (options.signal.aborted) throw options.signal.reason;
    }
  }
}
