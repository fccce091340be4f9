/** Raised when the user presses Ctrl-C (or the process gets SIGTERM), so commands unwind and stop what they started. */
export class InterruptedError extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`interrupted by ${signal}`);
    this.name = 'InterruptedError';
  }
}

/** A promise that rejects on the next SIGINT or SIGTERM; `dispose` removes the handlers. */
export function interruption(): { promise: Promise<never>; dispose(): void } {
  let dispose = () => undefined as void;
  const promise = new Promise<never>((_, reject) => {
    const handler = (signal: NodeJS.Signals) => reject(new InterruptedError(signal));
    process.once('SIGINT', handler);
    process.once('SIGTERM', handler);
    dispose = () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    };
  });
  promise.catch(() => undefined);
  return { promise, dispose };
}

/** Resolves on the next SIGINT or SIGTERM: how a serving command (api, view, proxy, inference) waits to be stopped. */
export function untilInterrupted(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
