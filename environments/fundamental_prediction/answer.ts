/** Reading the model's prediction out of its answer: pure functions, no I/O. */

/** The three directions a fundamental metric can move in, as the data set's `answer` column spells them. */
export const DIRECTIONS = ['maintained', 'raised', 'reduced'] as const;
export type Direction = (typeof DIRECTIONS)[number];

/** What the model predicted: a direction and the percentage as it wrote it (digits, maybe signed and decimal). */
export interface Prediction {
  direction: Direction;
  magnitude: string;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The one answer sentence `The <metric> will be: <direction> and the magnitude will be: <n>%` the prompt asks for.
 * Case-insensitive; the metric's name must appear as the item spells it.
 */
export function answerPattern(metric: string): RegExp {
  return new RegExp(
    `The ${escapeRegExp(metric)} will be:\\s*(maintained|raised|reduced)\\s*and\\s*the\\s*magnitude\\s*will\\s*be:\\s*([-+]?\\d+(?:\\.\\d+)?)%`,
    'gi',
  );
}

/**
 * The prediction in a completion, or null when it breaks the format. As Atropos's `_extract_prediction`: the
 * completion must hold exactly one `<think>` and one `</think>` (any case), the opening tag before the closing one;
 * the text after `</think>` must hold the answer sentence exactly once (two predictions are no prediction). A
 * direction other than the three, or a magnitude that is not a number followed by `%`, does not match the sentence.
 */
export function parsePrediction(completion: string, metric: string): Prediction | null {
  if ((completion.match(/<think>/gi) ?? []).length !== 1) return null;
  if ((completion.match(/<\/think>/gi) ?? []).length !== 1) return null;
  const close = completion.search(/<\/think>/i);
  const thinking = completion.slice(0, close);
  if (!thinking.toLowerCase().includes('<think>')) return null;
  const matches = [...completion.slice(close + '</think>'.length).matchAll(answerPattern(metric))];
  if (matches.length !== 1) return null;
  const [, direction, magnitude] = matches[0]!;
  return { direction: direction!.toLowerCase() as Direction, magnitude: magnitude! };
}

// Python's float() grammar for ASCII text: digits with single underscores between them, an optional fraction and
// exponent, or inf/infinity/nan; surrounding whitespace is ignored.
const DIGITS = '\\d(?:_?\\d)*';
const PY_FLOAT = new RegExp(`^[+-]?(?:(?:${DIGITS}(?:\\.(?:${DIGITS})?)?|\\.${DIGITS})(?:[eE][+-]?${DIGITS})?|inf|infinity|nan)$`, 'i');

/**
 * A magnitude as Python's `float()` reads it (the data set's column is text, read that way by Atropos); null where
 * `float()` raises. Numbers pass through.
 */
export function pythonFloat(value: string | number): number | null {
  if (typeof value === 'number') return value;
  const text = value.trim();
  if (!PY_FLOAT.test(text)) return null;
  const unsigned = text.replace(/^[+-]/, '').toLowerCase();
  const sign = text.startsWith('-') ? -1 : 1;
  if (unsigned === 'nan') return Number.NaN;
  if (unsigned === 'inf' || unsigned === 'infinity') return sign * Number.POSITIVE_INFINITY;
  return Number(text.replace(/_/g, ''));
}
