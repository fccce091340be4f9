import { runConfigKey, type RunConfigRecord } from '../config/run-config.js';
import { loadTokenizer, type Tokenizer } from '../inference/tokenizer.js';
import { MASKED, type Message } from '../schema/scored-data.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';

/** A run's tokenizer, or why there is none to decode its tokens with. */
export type RunTokenizer = { tokenizer: Tokenizer } | { problem: string };

/**
 * The tokenizer a run recorded in its config (`tokenizer_name`, as Atropos's environments name theirs), loaded once
 * on first use: for groups whose messages do not say what was generated (Atropos's gsm8k_server keeps tokens only).
 */
export function runTokenizer(store: TrajectoryStore, runId: string, environment: string): () => Promise<RunTokenizer> {
  let loaded: Promise<RunTokenizer> | undefined;
  return () =>
    (loaded ??= (async () => {
      const record = await store.tryGet<RunConfigRecord>(runConfigKey(runId, environment)).catch(() => undefined);
      const name = record?.env.tokenizer_name;
      if (typeof name !== 'string' || name === '') return { problem: `run ${runId} (${environment}) records no tokenizer_name` };
      try {
        return { tokenizer: await loadTokenizer(name) };
      } catch (error) {
        return { problem: `its tokenizer ${name} did not load: ${(error as Error).message}` };
      }
    })());
}

/** Whether a sequence's messages say nothing of what the model generated: no assistant message (or none at all). */
export function lacksReply(messages: readonly Message[] | null | undefined): boolean {
  return !(messages ?? []).some((m) => m.role === 'assistant');
}

/**
 * A sequence's text decoded: the prompt (the positions before the first one trained on, which the chat template
 * rendered) and the rest (what the model generated, and any turns after it), special tokens left out.
 */
export function decodeSequence(
  tokenizer: Tokenizer,
  tokens: readonly number[],
  masks: readonly number[],
): { prompt: string; reply: string } {
  const first = masks.findIndex((mask) => mask !== MASKED);
  const cut = first < 0 ? tokens.length : first;
  const decode = (ids: readonly number[]) => tokenizer.decode(ids, { skipSpecialTokens: true }).trim();
  return { prompt: decode(tokens.slice(0, cut)), reply: decode(tokens.slice(cut)) };
}
