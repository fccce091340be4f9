import { isLosslessNumber, LosslessNumber, parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';

/**
 * Numbers of free-form fields kept exactly as posted. Atropos stores a posted group as Python objects and serves
 * it back with `json.dumps`, so a free-form `{"temperature": 1.0}` comes back `1.0` (a Python `float`) and a
 * 20-digit seed comes back whole. `JSON.parse` would turn the first into `1` (an `int` to a Python trainer) and
 * round the second. So the numbers of these fields whose text a JS number would not reproduce become
 * `LosslessNumber`s, which {@link exactJson} writes back as they came.
 */
export const FREE_FORM_FIELDS = ['messages', 'generation_params', 'overrides', 'group_overrides', 'images'] as const;
export type FreeFormField = (typeof FREE_FORM_FIELDS)[number];

const FREE_FORM = new Set<string>(FREE_FORM_FIELDS);
const QUOTE = 34;
const BACKSLASH = 92;

/** A number's text as JS writes it back, or a `LosslessNumber` keeping the text when JS would write another. */
const parseNumber = (text: string): unknown => {
  const value = Number(text);
  return String(value) === text ? value : new LosslessNumber(text);
};

function isSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9;
}

/** Index just past the string token starting at `at` (a `"`). */
function skipString(text: string, at: number): number {
  let i = at + 1;
  for (;;) {
    const next = text.indexOf('"', i);
    if (next < 0) return text.length;
    let slashes = 0;
    for (let j = next - 1; text.charCodeAt(j) === BACKSLASH; j--) slashes++;
    if (slashes % 2 === 0) return next + 1;
    i = next + 1;
  }
}

/** Index just past the JSON value starting at `at` (text already known to be valid JSON). */
function skipValue(text: string, at: number): number {
  const first = text.charCodeAt(at);
  if (first === QUOTE) return skipString(text, at);
  if (first !== 123 && first !== 91) {
    let i = at;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 44 || c === 125 || c === 93 || isSpace(c)) break;
      i++;
    }
    return i;
  }
  let depth = 0;
  let i = at;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = skipString(text, i);
      continue;
    }
    if (c === 123 || c === 91) depth++;
    else if (c === 125 || c === 93) {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return i;
}

function skipSpace(text: string, at: number): number {
  let i = at;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** Whether JSON text holds a number: a digit outside its strings (base64 images and text hold digits too). */
function hasNumber(text: string): boolean {
  for (let at = 0; at < text.length;) {
    const quote = text.indexOf('"', at);
    if (/\d/.test(text.slice(at, quote < 0 ? text.length : quote))) return true;
    if (quote < 0) return false;
    at = skipString(text, quote);
  }
  return false;
}

/** The text of each free-form member of the object starting at `at` (the last one of a repeated key, as JSON.parse). */
function freeFormMembers(text: string, at: number): Map<string, string> {
  const found = new Map<string, string>();
  let i = skipSpace(text, at + 1);
  if (text.charCodeAt(i) === 125) return found;
  for (;;) {
    const keyEnd = skipString(text, i);
    const raw = text.slice(i + 1, keyEnd - 1);
    const key = raw.includes('\\') ? (JSON.parse(text.slice(i, keyEnd)) as string) : raw;
    const start = skipSpace(text, skipSpace(text, keyEnd) + 1);
    const end = skipValue(text, start);
    if (FREE_FORM.has(key)) found.set(key, text.slice(start, end));
    i = skipSpace(text, end);
    if (text.charCodeAt(i) !== 44) return found;
    i = skipSpace(text, i + 1);
  }
}

/**
 * The free-form members' text of each posted group: one map for a body that is a group, one per element for a
 * list of groups. `text` must be valid JSON (it already went through `JSON.parse`).
 */
export function freeFormTexts(text: string): Map<string, string>[] {
  const at = skipSpace(text, 0);
  if (text.charCodeAt(at) === 123) return [freeFormMembers(text, at)];
  if (text.charCodeAt(at) !== 91) return [];
  const groups: Map<string, string>[] = [];
  let i = skipSpace(text, at + 1);
  if (text.charCodeAt(i) === 93) return groups;
  for (;;) {
    groups.push(text.charCodeAt(i) === 123 ? freeFormMembers(text, i) : new Map());
    i = skipSpace(text, skipValue(text, i));
    if (text.charCodeAt(i) !== 44) return groups;
    i = skipSpace(text, i + 1);
  }
}

/** True when `value` holds a `LosslessNumber` anywhere. */
export function hasExactNumbers(value: unknown): boolean {
  if (isLosslessNumber(value)) return true;
  if (Array.isArray(value)) return value.some(hasExactNumbers);
  if (value !== null && typeof value === 'object') return Object.values(value).some(hasExactNumbers);
  return false;
}

/** A JSON value's text read back with every number JS would write otherwise kept as a `LosslessNumber`. */
export function parseExact(text: string): unknown {
  return parseLossless(text, null, parseNumber);
}

/**
 * Replaces, in each validated group, the free-form fields whose numbers JSON.parse changed by their exact values.
 * `groups` are the validated posts in body order; `text` is the body they were parsed from.
 */
export function keepExactNumbers(text: string, groups: readonly Record<string, unknown>[]): void {
  // Most posts name no free-form field (escaped key names aside, which the scan below reads too).
  if (!FREE_FORM_FIELDS.some((field) => text.includes(field)) && !text.includes('\\u')) return;
  freeFormTexts(text).forEach((members, i) => {
    const group = groups[i];
    if (!group) return;
    for (const [field, raw] of members) {
      if (!hasNumber(raw)) continue;
      const exact = parseExact(raw);
      if (hasExactNumbers(exact)) group[field] = exact;
    }
  });
}

/** JSON text of a value that may hold `LosslessNumber`s, each written as it was posted. */
export function exactJson(value: unknown): string {
  return stringifyLossless(value) ?? 'null';
}

/** A value with every `LosslessNumber` replaced by the nearest JS number (what a plain JSON reader would see). */
export function plainNumbers(value: unknown): unknown {
  if (isLosslessNumber(value)) return Number(value.value);
  if (Array.isArray(value)) return value.map(plainNumbers);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plainNumbers(v)]));
  }
  return value;
}

/** Key of a stored group's record of exact free-form texts; a plain JSON reader still finds the 14 fields beside it. */
export const EXACT_KEY = 'clotho_exact_json';

/**
 * A group as the trajectory store keeps it: plain JSON (the store writes `JSON.stringify`), the free-form fields
 * that hold exact numbers also written as text under {@link EXACT_KEY}.
 */
export function toStored<G extends object>(group: G): G {
  const exact: Record<string, string> = {};
  const plain: Record<string, unknown> = { ...(group as Record<string, unknown>) };
  for (const field of FREE_FORM_FIELDS) {
    const value = plain[field];
    if (!hasExactNumbers(value)) continue;
    exact[field] = exactJson(value);
    plain[field] = plainNumbers(value);
  }
  if (Object.keys(exact).length > 0) plain[EXACT_KEY] = exact;
  return plain as G;
}

/** The group {@link toStored} wrote, with its exact numbers back. */
export function fromStored<G extends object>(stored: G): G {
  const { [EXACT_KEY]: exact, ...group } = stored as Record<string, unknown>;
  if (exact === undefined) return stored;
  for (const [field, text] of Object.entries(exact as Record<string, string>)) group[field] = parseExact(text);
  return group as G;
}
