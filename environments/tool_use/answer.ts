/** Final-answer extraction and comparison for tool_use: pure functions, no I/O. */
import { lastBoxed, stripThinking } from 'clotho';

/**
 * The final answer of a completion: the last `\boxed{…}`, else the last `<answer>…</answer>`. After a reasoning
 * block only the text after `</think>` counts, and a `<think>` never closed means no answer.
 */
export function extractAnswer(completion: string): string | null {
  const text = stripThinking(completion);
  if (text === null) return null;
  const answer = lastBoxed(text) ?? [...text.matchAll(/<answer>([\s\S]*?)<\/answer>/g)].at(-1)?.[1] ?? null;
  return answer === null ? null : answer.trim();
}

/** One number in an answer (`12,400`, `-3.5`, `$1,200`, `\text{4,410 metres}`); null when none or several. */
export function answerNumber(answer: string): number | null {
  const numbers = answer
    .replace(/\u2212/g, '-')
    .replace(/(\d),(?=\d{3}(?!\d))/g, '$1')
    .match(/-?(?:\d+(?:\.\d+)?|\.\d+)/g);
  return numbers?.length === 1 ? Number(numbers[0]) : null;
}

/** A name for comparison: lower case, LaTeX `\text{}` and punctuation gone, no leading "the" or "province of". */
export function normalizeName(answer: string): string {
  return answer
    .replace(/\\(?:text|textbf|mathrm)\s*\{([^{}]*)\}/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^(?:the )?(?:province of )?/, '');
}

/** Whether an extracted answer is the gold one: numbers within 1e-6, names after {@link normalizeName}. */
export function answersMatch(answer: string | null, gold: number | string): boolean {
  if (answer === null) return false;
  if (typeof gold === 'string') return normalizeName(answer) === normalizeName(gold);
  const value = answerNumber(answer);
  return value !== null && Math.abs(value - gold) <= 1e-6;
}
