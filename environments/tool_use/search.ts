/** BM25 ranking over a small corpus of passages: what the `search` tool runs. Pure, no I/O. */
import type { Passage } from './tasks.js';

// Words that carry no meaning for ranking; questions are full of them.
const STOPWORDS = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'by',
  'for',
  'from',
  'how',
  'in',
  'is',
  'it',
  'its',
  'of',
  'on',
  'or',
  'the',
  'to',
  'was',
  'what',
  'which',
  'who',
  'with',
]);
// The usual BM25 constants (Robertson et al.): term-frequency saturation and length normalization.
const K1 = 1.2;
const B = 0.75;

// A plural's "s" is dropped, so that "towns" finds "one town"; enough stemming for a corpus written in one style.
const stem = (word: string): string => (word.length > 3 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word);

/** Lower-case word and number tokens without stopwords; "12,400" is one token, as in the corpus. */
export function terms(text: string): string[] {
  return (text.toLowerCase().match(/\d[\d,]*\d|\p{L}[\p{L}\p{N}]*|\d/gu) ?? []).filter((t) => !STOPWORDS.has(t)).map(stem);
}

export interface Ranked {
  passage: Passage;
  score: number;
}

/** An index of passages (title and text): `rank(query)` gives those sharing a term with it, best first. */
export function bm25Index(passages: readonly Passage[]): { rank(query: string): Ranked[] } {
  const docs = passages.map((p) => terms(`${p.title} ${p.text}`));
  const avgLength = docs.reduce((sum, d) => sum + d.length, 0) / Math.max(1, docs.length);
  const frequency = new Map<string, number>();
  for (const d of docs) for (const t of new Set(d)) frequency.set(t, (frequency.get(t) ?? 0) + 1);
  const idf = (t: string): number => {
    const n = frequency.get(t) ?? 0;
    return Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
  };
  return {
    rank(query) {
      const wanted = [...new Set(terms(query))];
      return (
        docs
          .map((d, i) => {
            let score = 0;
            for (const t of wanted) {
              const tf = d.filter((x) => x === t).length;
              if (tf > 0) score += (idf(t) * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * d.length) / avgLength));
            }
            return { passage: passages[i]!, score };
          })
          .filter((r) => r.score > 0)
          // Ties keep corpus order, so the ranking is the same on every worker.
          .sort((a, b) => b.score - a.score)
      );
    },
  };
}
