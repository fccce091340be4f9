import { loadTokenizer, type Tokenizer } from '../../inference/tokenizer.js';
import { contentText, type RawGroup } from './model.js';

/** The tokenizer the embedded engine's models carry: the one to try when a run does not say which it used. */
export const EMBEDDED_TOKENIZER = 'qwen3';

/** Turns token ids into text pieces for one run; null when the run's tokenizer is not known. */
export type PieceDecoder = (ids: number[]) => string[] | null;

const squash = (text: string) => text.replace(/\s+/g, '');

/**
 * Whether `tokenizer` is the one that made this group: the text its first trained span decodes to holds the
 * assistant message that span is (tool calls and end tokens may follow it). Undefined when the group has no
 * assistant text to check against.
 */
export function tokenizerMatches(tokenizer: Tokenizer, group: RawGroup): boolean | undefined {
  for (const [sample, messages] of group.messages.entries()) {
    const answer = squash(contentText(messages.find((m) => m.role === 'assistant')?.content ?? null)).slice(0, 60);
    const masks = group.masks[sample] ?? [];
    const ids = group.tokens[sample] ?? [];
    const start = masks.findIndex((m) => m !== -100);
    if (answer.length < 4 || start < 0) continue;
    let end = start;
    while (end < masks.length && masks[end] !== -100) end++;
    const decoded = squash(tokenizer.decode(ids.slice(start, end), { skipSpecialTokens: true }));
    // A reasoning model's think block may come first; the answer must be there somewhere.
    return decoded.includes(answer);
  }
  return undefined;
}

/**
 * How each run's tokens are shown. With `auto`, the tokenizer (loaded on first use) is used for a run only when it
 * reproduces the run's assistant messages from their tokens; otherwise for every run. No tokenizer: ids.
 */
export function tokenDecoders(
  tokenizer: () => Promise<Tokenizer | null>,
  auto: boolean,
): { forRun(runId: string, sample: RawGroup): Promise<{ decode: PieceDecoder; name: string | null }> } {
  let loaded: Promise<Tokenizer | null> | undefined;
  const decided = new Map<string, boolean>();
  return {
    async forRun(runId, sample) {
      const t = await (loaded ??= tokenizer());
      if (t && auto && !decided.has(runId)) {
        const matches = tokenizerMatches(t, sample);
        if (matches !== undefined) decided.set(runId, matches);
      }
      if (!t || (auto && decided.get(runId) !== true)) return { decode: () => null, name: null };
      const cache = new Map<number, string>();
      const piece = (id: number) => {
        let text = cache.get(id);
        if (text === undefined) cache.set(id, (text = t.decode([id])));
        return text;
      };
      return { decode: (ids) => ids.map(piece), name: t.name };
    },
  };
}

/**
 * The decoders `--tokenizer` asks for: `none` (ids), `auto` (the embedded engine's tokenizer where it fits the run),
 * or a tokenizer source (`qwen3`, a Hub repo id, a folder), loaded now so that a bad one is reported at start.
 */
export async function decodersFor(option: string): Promise<ReturnType<typeof tokenDecoders>> {
  if (option === 'none') return tokenDecoders(async () => null, false);
  if (option === 'auto') return tokenDecoders(() => loadTokenizer(EMBEDDED_TOKENIZER).catch(() => null), true);
  const tokenizer = await loadTokenizer(option);
  return tokenDecoders(async () => tokenizer, false);
}
