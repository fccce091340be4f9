/** A function whose concurrent calls are joined into few (see {@link coalesced}). */
export interface Coalesced<T, R> {
  (items: T[]): Promise<R[]>;
  /**
   * Announces `n` items on their way (still being prepared, e.g. written to the store): a call about to start waits
   * for them, up to `lingerMs`, so that they go in it. Returns what to call once they are handed over or given up.
   */
  announce(n: number): () => void;
}

/**
 * Joins concurrent calls into few: up to `lanes` calls run at once, and arguments arriving meanwhile queue up to go
 * together in the next call, each caller receiving its own slice of the results. A call that would start while
 * announced items are still on their way waits up to `lingerMs` for them. When a joined call fails, each caller's
 * part is tried alone, so that one caller's bad input fails only that caller.
 */
export function coalesced<T, R>(
  call: (items: T[]) => Promise<R[]>,
  { lanes, lingerMs }: { lanes: number; lingerMs: number },
): Coalesced<T, R> {
  let pending: { items: T[]; resolve: (r: R[]) => void; reject: (e: unknown) => void }[] = [];
  let running = 0;
  let coming = 0;
  let waiters: (() => void)[] = [];
  const wake = () => {
    const woken = waiters;
    waiters = [];
    for (const w of woken) w();
  };
  const arrivals = async () => {
    if (coming === 0 || lingerMs <= 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      waiters.push(resolve);
      timer = setTimeout(resolve, lingerMs);
    });
    clearTimeout(timer);
  };
  const drain = async () => {
    running++;
    while (pending.length > 0) {
      await arrivals();
      const batch = pending;
      pending = [];
      try {
        const results = await call(batch.flatMap((p) => p.items));
        let offset = 0;
        for (const p of batch) {
          p.resolve(results.slice(offset, offset + p.items.length));
          offset += p.items.length;
        }
      } catch (error) {
        if (batch.length === 1) batch[0]!.reject(error);
        else await Promise.all(batch.map((p) => call(p.items).then(p.resolve, p.reject)));
      }
    }
    running--;
  };
  const joined = (items: T[]) =>
    new Promise<R[]>((resolve, reject) => {
      pending.push({ items, resolve, reject });
      if (running < lanes) void drain();
    });
  joined.announce = (n: number) => {
    coming += n;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      coming -= n;
      if (coming === 0) wake();
    };
  };
  return joined;
}
