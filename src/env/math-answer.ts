/**
 * Math-aware final answers: where a completion states its answer, and whether two answers are the same value.
 * LaTeX is parsed by the Compute Engine (`@cortex-js/compute-engine`), not matched by patterns: `\frac{\sqrt2}{2}`,
 * `\sqrt{2}/2` and `0.70710678` are one number, `2x+1` and `1+2x` one expression. Pure functions, shared by environments.
 */
import { ComputeEngine } from '@cortex-js/compute-engine';
import { lastBoxed, stripThinking } from './answers.js';

// A number as prose writes it: `-5`, `1,234.5`, `.5`, `3/4`, `25%`. A minus right after a word or digit is a hyphen or a
// subtraction (`16-3-4`), not a sign.
const NUMBER = /(?<![\w.)])-?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:\s*\/\s*\d+(?:\.\d+)?)?%?|(?<![\w.)])-?\.\d+%?/g;

/** The last number in prose, as written (`1,234`, `3/4`, `-2.5`); null when there is none. */
export function lastNumber(text: string): string | null {
  return (
    text
      .replace(/\u2212/g, '-')
      .match(NUMBER)
      ?.at(-1) ?? null
  );
}

/** How {@link extractMathAnswer} reads a completion. */
export interface MathExtractOptions {
  /** Read only the text after the last `</think>`; an open `<think>` then means no answer. @default true */
  splitOnThink?: boolean;
}

/**
 * A completion's final answer: the last `\boxed{…}` (nested braces kept), else the last number in the text. With
 * `splitOnThink` (the default) only the text after the reasoning block counts ({@link stripThinking}).
 */
export function extractMathAnswer(completion: string, options: MathExtractOptions = {}): string | null {
  const text = options.splitOnThink === false ? completion : stripThinking(completion);
  if (text === null) return null;
  return lastBoxed(text) ?? lastNumber(text);
}

/**
 * The answer a data set's gold field holds. Numbers are themselves; text is read as Atropos's accuracy reward reads
 * it: the last `#### …` line (GSM8K's worked solutions), else the last `\boxed{…}` (MATH's solutions), else all of it.
 */
export function goldMathAnswer(gold: unknown): string | null {
  if (typeof gold === 'number' || typeof gold === 'bigint') return String(gold);
  if (typeof gold !== 'string') return null;
  const hashes = [...gold.matchAll(/^[ \t]*####[ \t]*(.*?)[ \t]*$/gm)].at(-1);
  if (hashes) return hashes[1]!;
  return lastBoxed(gold) ?? (gold.trim() || null);
}

const WRAPPERS = /\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mathit|mathsf|mbox|bm|boldsymbol|operatorname)\s*\{([^{}]*)\}/g;
// Units and other words after a number: `3 cm`, `18 dollars`, `5 km/h`, `4 m^2`. Written without a space only the
// common units count, so `2x` and `3ab` keep their variables.
const UNIT = String.raw`[A-Za-z]+(?:\s*\^\{?\d\}?)?(?:\/[A-Za-z]+(?:\^\{?\d\}?)?)?\.?`;
const UNITS = new RegExp(String.raw`^(.*?[\d}.])(\s+(?:${UNIT}\s*)+|(?:cm|mm|km|kg|mg|ml|mL|ft|lbs?|oz|hrs?|min|sec|mph)\b.*)$`);

/**
 * An answer as the Compute Engine should read it: math delimiters, `\$`, `\text{…}` wrappers, units after a number,
 * degrees, `\left`/`\right`, spacing commands and thousands separators (`1,000`, `1{,}000`, `1\,000`) removed;
 * `\dfrac`/`\tfrac` as `\frac`; `%` and "percent" as `\%`; `x = 5` as `5`. Unicode `−×÷·π√∞` become their LaTeX.
 */
export function normalizeMathAnswer(answer: string): string {
  let s = answer
    .replace(/²/g, '^2')
    .replace(/³/g, '^3')
    .normalize('NFKC')
    .replace(/[\u2212\u2012]/g, '-')
    .replace(/\u2044/g, '/')
    .replace(/×/g, '\\times ')
    .replace(/÷/g, '\\div ')
    .replace(/[·⋅]/g, '\\cdot ')
    .replace(/π/g, '\\pi ')
    .replace(/√/g, '\\sqrt')
    .replace(/∞/g, '\\infty ')
    .replace(/°/g, '^\\circ')
    .replace(/\\\$|\$/g, '')
    .replace(/\\[()[\]]/g, ' ');
  for (let boxed = lastBoxed(s); boxed !== null && /^\s*\\(?:boxed|fbox)/.test(s); boxed = lastBoxed(s)) s = boxed;
  for (let previous = ''; previous !== s;) {
    previous = s;
    s = s.replace(WRAPPERS, ' $1 ');
  }
  s = s
    .replace(/\\[dtc]frac/g, '\\frac')
    .replace(/\\[dt]binom/g, '\\binom')
    .replace(/\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree|\bdegrees?\b/g, '')
    .replace(/(\d)\\,(?=\d{3}(?!\d))/g, '$1')
    .replace(/\\left\s*|\\right\s*/g, '')
    .replace(/\\!/g, '')
    .replace(/\\[,;: ]|~|\\q?quad/g, ' ')
    .replace(/\{,\}/g, ',')
    // A separator between groups of three digits, not a list (`1, 2`) or a decimal's digits.
    .replace(/(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])/g, (n) => n.replace(/,/g, ''))
    .replace(/\s*\b(?:percent|per cent)\b/gi, '\\%')
    .replace(/(?<!\\)%/g, '\\%');
  const equation = /^\s*[A-Za-z](?:_\{?\w+\}?)?\s*(?:=|\\approx)([^=]+)$/.exec(s);
  if (equation) s = equation[1]!;
  const units = UNITS.exec(s.trim());
  if (units && !/[A-Za-z]/.test(units[1]!.replace(/\\[A-Za-z]+/g, ''))) s = units[1]!;
  return s
    .replace(/\s+/g, ' ')
    .replace(/^\s*\+/, '')
    .replace(/\.\s*$/, '')
    .trim();
}

/** How {@link mathAnswersEqual} compares two answers. */
export interface MathCompareOptions {
  /** Absolute tolerance of numeric comparison (float noise of large values is forgiven apart from it). @default 1e-6 */
  tolerance?: number;
  /** Compare expressions with variables by their values at sample points (`2x+1` equals `1+2x`). @default true */
  symbolic?: boolean;
}

/**
 * Whether two answers are the same value: after {@link normalizeMathAnswer}, equal as text, or as numbers within the
 * tolerance (`\frac{1}{2}` and `0.5`, `\sqrt{2}/2` and `\frac{\sqrt{2}}{2}`), or as expressions equal at sample points
 * (`2x+1` and `1+2x`), or element by element as tuples and sets. A percentage matches both its fraction and its face
 * value: `50\%` equals `0.5` and `50` (data sets write "what percent…" golds either way). Null is never equal.
 */
export function mathAnswersEqual(
  given: string | number | null | undefined,
  gold: string | number | null | undefined,
  options: MathCompareOptions = {},
): boolean {
  if (given === null || given === undefined || gold === null || gold === undefined) return false;
  const a = normalizeMathAnswer(String(given));
  const b = normalizeMathAnswer(String(gold));
  if (a === '' || b === '') return false;
  const tolerance = options.tolerance ?? 1e-6;
  return readings(a).some((x) => readings(b).some((y) => sameAnswer(x, y, tolerance, options.symbolic ?? true)));
}

// A percentage is read as its fraction (the Compute Engine's `50\%` is 0.5) and as its face value.
const readings = (answer: string): string[] => (answer.endsWith('\\%') ? [answer, answer.slice(0, -2).trim()] : [answer]);

const PLAIN = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?(?:\s*\/\s*(?:\d+(?:\.\d*)?|\.\d+))?$/i;

function sameAnswer(a: string, b: string, tolerance: number, symbolic: boolean): boolean {
  if (a.replace(/\s/g, '') === b.replace(/\s/g, '')) return true;
  if (/^[A-Za-z ]+$/.test(a) && /^[A-Za-z ]+$/.test(b)) return a.toLowerCase() === b.toLowerCase(); // "Yes", "Tuesday"
  if (PLAIN.test(a) && PLAIN.test(b)) return close(plainValue(a), plainValue(b), tolerance); // the common case, engine-free
  if (a.length > MAX_PARSED || b.length > MAX_PARSED) return false;
  const x = parse(a);
  const y = parse(b);
  return x !== null && y !== null && sameValue(x, y, tolerance, symbolic);
}

function plainValue(text: string): number {
  const [numerator, denominator] = text.split('/').map((part) => Number(part.trim()));
  return denominator === undefined ? numerator! : numerator! / denominator;
}

function close(x: number, y: number, tolerance: number): boolean {
  if (!Number.isFinite(x) || !Number.isFinite(y)) return x === y; // NaN is never equal; infinities only to themselves
  return Math.abs(x - y) <= Math.max(tolerance, 1e-12 * Math.max(Math.abs(x), Math.abs(y)));
}

// --- the Compute Engine ------------------------------------------------------------------------------------------

/** Longer answers are compared as text only: an answer is a value, not an essay, and parsing has a cost. */
const MAX_PARSED = 400;

/** The part of the engine's expressions used here (its bundled declarations do not resolve under NodeNext). */
interface BoxedExpression {
  readonly operator: string;
  readonly ops: readonly BoxedExpression[] | null;
  readonly json: unknown;
  readonly unknowns: readonly string[];
  readonly isValid: boolean;
  /** Real and imaginary parts of a numeric value; NaN for anything else. */
  readonly re: number;
  readonly im: number;
  N(): BoxedExpression;
  subs(values: Record<string, number>): BoxedExpression;
  isSame(other: BoxedExpression): boolean;
}
interface Engine {
  precision: number | 'machine' | 'auto';
  parse(latex: string): BoxedExpression;
}

let engine: Engine | undefined;
function freshEngine(): Engine {
  const ce = new ComputeEngine() as unknown as Engine;
  // Machine floats: huge powers become Infinity at once instead of arbitrary-precision work without end.
  ce.precision = 'machine';
  return ce;
}

// Answers a fresh engine could not read either (an interval such as `(-\infty, 2]`): not worth another engine each time.
const unreadable = new Set<string>();

/** The parsed answer, or null when the engine cannot read it. */
function parse(latex: string): BoxedExpression | null {
  if (unreadable.has(latex)) return null;
  engine ??= freshEngine();
  let expr = engine.parse(latex);
  // The engine remembers what it inferred of a symbol (`x` a number, then `x_{10}` a list fails): retry afresh.
  if (!expr.isValid) expr = (engine = freshEngine()).parse(latex);
  if (expr.isValid) return expr;
  if (unreadable.size >= 10_000) unreadable.clear();
  unreadable.add(latex);
  return null;
}

const COLLECTIONS = new Set(['Tuple', 'List', 'Sequence', 'Set']);

function sameValue(x: BoxedExpression, y: BoxedExpression, tolerance: number, symbolic: boolean): boolean {
  const xs = COLLECTIONS.has(x.operator);
  if (xs || COLLECTIONS.has(y.operator)) {
    if (!xs || !COLLECTIONS.has(y.operator) || (x.operator === 'Set') !== (y.operator === 'Set')) return false;
    const [a, b] = [x.ops ?? [], y.ops ?? []];
    if (a.length !== b.length) return false;
    if (x.operator !== 'Set') return a.every((item, i) => sameValue(item, b[i]!, tolerance, symbolic));
    return a.every((item) => b.some((other) => sameValue(item, other, tolerance, symbolic)));
  }
  if (!evaluable(x.json as Json) || !evaluable(y.json as Json)) return x.isSame(y); // structure only: never evaluate the unknown
  const variables = [...new Set([...x.unknowns, ...y.unknowns])];
  if (variables.length === 0) {
    const [u, v] = [x.N(), y.N()];
    // Both overflowed (or are infinite): floats cannot tell 10^{10^{10}} from 10^{10^{11}}, structure can.
    return !Number.isFinite(u.re) && !Number.isFinite(v.re) ? x.isSame(y) : sameNumber(u, v, tolerance);
  }
  if (!symbolic || variables.length > 4) return x.isSame(y);
  // Equal as functions: equal at every sample point where both are defined, and defined at two at least.
  let defined = 0;
  for (const point of SAMPLE_POINTS) {
    const values = Object.fromEntries(variables.map((name, i) => [name, point[i]!]));
    const [u, v] = [x.subs(values).N(), y.subs(values).N()];
    if (!Number.isFinite(u.re) && !Number.isFinite(v.re)) continue;
    if (!sameNumber(u, v, 1e-9)) return false;
    defined++;
  }
  return defined >= 2;
}

// Arbitrary irrational-looking values: coincidences of different expressions there are vanishingly unlikely.
const SAMPLE_POINTS = [
  [0.5772, 1.3247, 2.6854, -0.3183],
  [1.618, -0.7071, 0.3679, 2.2214],
  [2.7183, 0.4142, -1.4142, 0.6931],
  [-0.9163, 3.1416, 1.2599, 0.5403],
  [0.1234, -2.2361, 0.866, 1.7725],
];

function sameNumber(u: BoxedExpression, v: BoxedExpression, tolerance: number): boolean {
  return close(u.re, v.re, tolerance) && close(u.im || 0, v.im || 0, tolerance);
}

// Operators that evaluate quickly in machine floats. Sums, products, integrals and limits are compared as structure
// only: a model's `\sum_{k=1}^{10^9} k` must not run a loop (or fill the heap) in the scoring step.
const EVALUABLE = new Set([
  'Add',
  'Subtract',
  'Negate',
  'Multiply',
  'Divide',
  'Rational',
  'Power',
  'Sqrt',
  'Root',
  'Square',
  'Exp',
  'Ln',
  'Log',
  'Lb',
  'Lg',
  'Abs',
  'Sin',
  'Cos',
  'Tan',
  'Cot',
  'Sec',
  'Csc',
  'Arcsin',
  'Arccos',
  'Arctan',
  'Sinh',
  'Cosh',
  'Tanh',
  'Complex',
  'Delimiter',
  'Half',
  'Floor',
  'Ceil',
  'Round',
  'Max',
  'Min',
]);

type Json = number | string | Json[] | { num?: string; sym?: string; str?: string; fn?: Json[] };

function evaluable(json: Json): boolean {
  if (typeof json === 'number') return true;
  if (typeof json === 'string') return !json.startsWith("'"); // a symbol, not a string literal
  if (Array.isArray(json)) {
    const [operator, ...args] = json;
    if (operator === 'Factorial') return typeof args[0] === 'number' && args[0] <= 170; // beyond, a double overflows
    return typeof operator === 'string' && EVALUABLE.has(operator) && args.every(evaluable);
  }
  if (json.fn) return evaluable(json.fn);
  return json.num !== undefined || json.sym !== undefined;
}
