import { stripThinking } from 'clotho';

/** The text of the last `<answer>…</answer>` after any reasoning block; null when there is none. */
export function extractAnswer(completion: string): string | null {
  const text = stripThinking(completion);
  if (text === null) return null;
  const matches = [...text.matchAll(/<answer>([\s\S]*?)<\/answer>/gi)];
  const last = matches.at(-1)?.[1]?.trim();
  return last === undefined || last === '' ? null : last;
}

const NUMBER_WORDS: Record<string, string> = {
  none: '0',
  zero: '0',
  one: '1',
  two: '2',
  three: '3',
  four: '4',
  five: '5',
  six: '6',
  seven: '7',
  eight: '8',
  nine: '9',
  ten: '10',
};
const ARTICLES = new Set(['a', 'an', 'the']);

/**
 * An answer as the VQA evaluation compares answers: lower case, punctuation dropped (a decimal point between digits
 * kept), articles dropped, number words up to ten written as digits, spaces collapsed: "Two." and "2" match, so do
 * "the red one" and "red one".
 */
export function normalizeAnswer(answer: string): string {
  return answer
    .toLowerCase()
    .replace(/(\d),(\d)/g, '$1$2')
    .replace(/(?<!\d)\.|\.(?!\d)/g, ' ')
    .replace(/[^\p{L}\p{N}.\s]/gu, ' ')
    .split(/\s+/)
    .filter((word) => word !== '' && !ARTICLES.has(word))
    .map((word) => NUMBER_WORDS[word] ?? word)
    .join(' ');
}

/** Whether a parsed answer is the gold answer, after normalisation. */
export function answersMatch(parsed: string | null, gold: string): boolean {
  return parsed !== null && normalizeAnswer(parsed) === normalizeAnswer(gold);
}

/**
 * VQAv2's accuracy of an answer against its ten human answers: min(1, matches / 3) over each leave-one-out set of
 * nine, averaged, so an answer three annotators gave scores 0.9 and one four or more gave scores 1.
 */
export function vqaAccuracy(parsed: string | null, humanAnswers: readonly string[]): number {
  if (parsed === null || humanAnswers.length === 0) return 0;
  const answer = normalizeAnswer(parsed);
  const same = humanAnswers.map((h) => normalizeAnswer(h) === answer);
  const total = same.filter(Boolean).length;
  const sets = same.map((matched) => Math.min(1, (total - (matched ? 1 : 0)) / 3));
  return sets.reduce((a, b) => a + b, 0) / sets.length;
}
