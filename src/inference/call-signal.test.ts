import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { callSignal } from './call-signal.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A full collection; `--expose-gc` set at run time reaches a fresh context's `gc`. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Whether `ref`'s object is collected within a few collections (finalisation needs a turn of the loop). */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let round = 0; round < 10; round++) {
    await new Promise((done) => setImmediate(done));
    collectGarbage();
    if (ref.deref() === undefined) return true;
  }
  return false;
}

describe('callSignal', () => {
  it("aborts with a source's reason, at once when the source already has", () => {
    const source = new AbortController();
    const call = callSignal([undefined, source.signal], 60_000);
    source.abort(new Error('cancelled'));
    expect(call.signal.aborted).toBe(true);
    expect(call.signal.reason).toEqual(new Error('cancelled'));
    expect(call.timedOut).toBe(false);
    expect(callSignal([source.signal]).signal.reason).toEqual(new Error('cancelled'));
  });

  it('aborts at its deadline with a TimeoutError, and not once released', () => {
    vi.useFakeTimers();
    const late = callSignal([], 1_000);
    vi.advanceTimersByTime(999);
    expect(late.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(late.timedOut).toBe(true);
    expect(late.signal.reason).toMatchObject({ name: 'TimeoutError' });

    const source = new AbortController();
    const done = callSignal([source.signal], 1_000);
    done.release();
    vi.advanceTimersByTime(2_000);
    source.abort();
    expect(done.signal.aborted).toBe(false);
  });

  it('aborts by hand with the reason given (a sibling failed)', () => {
    const call = callSignal([]);
    call.abort(new Error('sibling failed'));
    expect(call.signal.reason).toEqual(new Error('sibling failed'));
  });

  it('leaves nothing that keeps a released signal alive, under a long-lived source and a long deadline', async () => {
    const source = new AbortController();
    let ref!: WeakRef<AbortSignal>;
    (() => {
      const call = callSignal([source.signal], 1_200_000);
      // As the OpenAI SDK and fetch do: a listener on the call's signal, never removed.
      call.signal.addEventListener('abort', () => undefined, { once: true });
      ref = new WeakRef(call.signal);
      call.release();
    })();
    expect(await collected(ref)).toBe(true);
    expect(source.signal.aborted).toBe(false);
  });
});
