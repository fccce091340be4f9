import type { LlamaContextSequence, Token } from 'node-llama-cpp';

/**
 * The context's sequences, lent one per running sample. Requests beyond the slot count wait in
 * arrival order. A free slot whose cached tokens share the longest prefix with the new prompt is
 * preferred, so a multi-turn conversation re-evaluates only its new turn.
 */
export class SlotPool {
  private readonly free: LlamaContextSequence[];
  private readonly waiters: Array<(seq: LlamaContextSequence) => void> = [];

  constructor(sequences: LlamaContextSequence[]) {
    this.free = [...sequences];
  }

  /** Waits for a free sequence; `prompt` only steers which free one is chosen. */
  acquire(prompt: readonly Token[] = []): Promise<LlamaContextSequence> {
    if (this.free.length === 0) return new Promise((resolve) => this.waiters.push(resolve));
    let best = 0;
    let bestShared = -1;
    this.free.forEach((seq, i) => {
      const shared = prompt.length === 0 ? 0 : seq.compareContextTokens([...prompt]).firstDifferentIndex;
      if (shared > bestShared) [best, bestShared] = [i, shared];
    });
    return Promise.resolve(this.free.splice(best, 1)[0]!);
  }

  /** Gives a sequence back, straight to the longest-waiting request if there is one. */
  release(seq: LlamaContextSequence): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(seq);
    else this.free.push(seq);
  }

  /** Runs `fn` with a lent sequence and always gives it back. */
  async with<T>(prompt: readonly Token[], fn: (seq: LlamaContextSequence) => Promise<T>): Promise<T> {
    const seq = await this.acquire(prompt);
    try {
      return await fn(seq);
    } finally {
      this.release(seq);
    }
  }
}

/**
 * Drops the sequence's cached tokens after the longest prefix it shares with `tokens` (keeping at
 * most `keepAtMost`), and returns how many leading tokens are already evaluated.
 */
export async function alignSequence(seq: LlamaContextSequence, tokens: readonly Token[], keepAtMost: number): Promise<number> {
  const shared = seq.compareContextTokens([...tokens]).firstDifferentIndex;
  const keep = Math.max(0, Math.min(shared, keepAtMost));
  if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
  return keep;
}
