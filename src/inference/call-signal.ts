/** The abort signal of one call to a server: its sources, its deadline, and a release when the call ends. */
export interface CallSignal {
  readonly signal: AbortSignal;
  /** Whether the deadline, not a source, aborted the call. */
  readonly timedOut: boolean;
  /** Aborts the call (a sibling failed, say) with `reason`. */
  abort(reason?: unknown): void;
  /** Ends the call: stops the deadline and unhooks from the sources, so nothing outside keeps the signal alive. */
  release(): void;
}

/**
 * A signal that aborts when any source does or after `timeoutMs`, released when the call ends.
 *
 * Not `AbortSignal.timeout` and `AbortSignal.any`: Node keeps a timeout or composite signal that has an abort
 * listener alive until it aborts, and the OpenAI SDK and fetch add listeners they never remove. Every call kept its
 * signal, its request's controller and what hangs off them for `timeout` seconds after it ended (1,200 s by
 * default), and for ever under a source that never aborts: `bench:memory`'s worker heap grew by about 2.4 KB a group.
 */
export function callSignal(sources: readonly (AbortSignal | undefined)[], timeoutMs?: number): CallSignal {
  const controller = new AbortController();
  let timedOut = false;
  const hooked: [AbortSignal, () => void][] = [];
  const release = () => {
    clearTimeout(timer);
    for (const [source, forward] of hooked.splice(0)) source.removeEventListener('abort', forward);
  };
  const abort = (reason?: unknown) => {
    release();
    controller.abort(reason);
  };
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
        }, timeoutMs);
  // Like AbortSignal.timeout's, the deadline alone does not keep the process running.
  timer?.unref();
  for (const source of sources) {
    if (!source) continue;
    if (source.aborted) {
      abort(source.reason);
      break;
    }
    const forward = () => abort(source.reason);
    source.addEventListener('abort', forward, { once: true });
    hooked.push([source, forward]);
  }
  return {
    signal: controller.signal,
    get timedOut() {
      return timedOut;
    },
    abort,
    release,
  };
}
