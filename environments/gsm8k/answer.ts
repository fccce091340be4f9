/** Answer extraction and numeric comparison for GSM8K: pure functions, no I/O. */
import { lastBoxed, stripThinking } from 'clotho';

/** Strips LaTeX wrappers and currency so that only the number and maybe a unit word remain. */
function clean(answer: string): string {
  let text = answer;
  // Innermost first, so `\text{\textbf{5}}` and `\frac{\text{3}}{4}` unwrap fully.
  for (let prev = ''; prev !== text; ) {
    prev = text;
    text = text
      .replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, '$1/$2')
      .replace(/\\(?:text|textbf|textrm|mathrm|mathbf|mbox)\s*\{([^{}]*)\}/g, ' $1 ');
  }
  return text
    .replace(/\^\s*\{?\\circ\}?/g, '')
    .replace(/\\%/g, '%')
    .replace(/\\(?:left|right|[,!;: ])/g, ' ')
    .replace(/\\?\$/g, '')
    .trim();
}

const NUMBER = /-?(?:\d+(?:\.\d*)?|\.\d+)(?:\s*\/\s*-?(?:\d+(?:\.\d*)?|\.\d+))?%?/g;

/** Normalises what can hide a number: the Unicode minus and thousands separators. */
const normalise = (text: string): string => text.replace(/\u2212/g, '-').replace(/(\d),(?=\d{3}(?!\d))/g, '$1');

/**
 * The model's final answer as text: the last `\boxed{…}`, else the last `#### …` line, else the
 * last number in the text. After a reasoning block only the part after `</think>` counts; a
 * reasoning block that never closed means there is no answer.
 */
export function extractAnswer(completion: string): string | null {
  const text = stripThinking(completion);
  if (text === null) return null;
  const boxed = lastBoxed(text);
  if (boxed !== null) return clean(boxed);
  const hashes = [...text.matchAll(/^[ \t]*####[ \t]*(.*)$/gm)].at(-1);
  if (hashes) return clean(hashes[1]!);
  const numbers = normalise(text).match(NUMBER);
  return numbers ? numbers.at(-1)! : null;
}

/**
 * Reads one number from an answer: `1,234`, `-5`, `0.5`, `3/4`, `25%` (read as 25), `$18 dollars`.
 * Null when there is no number, or more than one (`2 hours 30 minutes` is ambiguous, not 30).
 */
export function parseNumber(text: string | null): number | null {
  if (text === null) return null;
  const numbers = normalise(clean(text)).match(NUMBER);
  if (numbers?.length !== 1) return null;
  const [numerator, denominator] = numbers[0]!.replace('%', '').split('/').map((part) => Number(part.trim()));
  const value = denominator === undefined ? numerator! : numerator! / denominator;
  return Number.isFinite(value) ? value : null;
}

/** The gold answer of a GSM8K solution: the number on its last `#### n` line. */
export function goldAnswer(solution: string): number | null {
  const line = [...solution.matchAll(/^####[ \t]*(.*)$/gm)].at(-1);
  return line ? parseNumber(line[1]!) : null;
}

/**
 * Whether two answers are the same number, up to float noise (1e-6): `0.1 + 0.2` is 0.3, `3/4` is
 * 0.75. Absolute, not relative: GSM8K's answers are exact, and 1,000,001 is not 1,000,000.
 */
export function answersMatch(a: number | null, b: number | null): boolean {
  if (a === null || b === null) return false;
  return a === b || Math.abs(a - b) <= 1e-6;
}
