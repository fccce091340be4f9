/** Reading a model's final answer: reasoning blocks, boxes and multiple-choice letters. Pure functions, shared by environments. */

/**
 * The part of a completion that holds its answer: the text after the last `</think>` (any case), or the whole text when
 * there is no reasoning block. Null when a `<think>` is still open at the end: a reasoning model cut off by
 * `max_tokens` mid-thought (or one that began thinking again after it answered) has given no answer, whatever numbers
 * or letters its thoughts mention; reading them would reward never closing the block. A completion holding only
 * `</think>` (its template opened the block in the prompt) is read after it; one of those cut off mid-thought holds
 * no tag at all and cannot be told from a reply without reasoning.
 */
export function stripThinking(text: string): string | null {
  const end = text.toLowerCase().lastIndexOf('</think>');
  const after = end >= 0 ? text.slice(end + '</think>'.length) : text;
  return after.toLowerCase().includes('<think>') ? null : after;
}

/**
 * The contents of the last `\boxed{…}` or `\fbox{…}` (the last box wins), trimmed, nested braces balanced and escaped
 * braces (`\{`) taken as characters; `\boxed 42` (no braces) gives its next token. `''` for an empty box (the model
 * boxed nothing), null when there is no box or the last one never closes (cut off mid-answer: the earlier boxes were
 * not its answer).
 */
export function lastBoxed(text: string): string | null {
  const box = [...text.matchAll(/\\(?:boxed|fbox)(?![A-Za-z])\s*/g)].at(-1);
  if (!box) return null;
  const rest = text.slice(box.index + box[0].length);
  if (!rest.startsWith('{')) return /^[^\s$]*/.exec(rest)![0] || null; // `\boxed 42`
  let depth = 0;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '\\')
      i++; // `\{` is a brace character, not a group
    else if (rest[i] === '{') depth++;
    else if (rest[i] === '}' && --depth === 0) return rest.slice(1, i).trim();
  }
  return null;
}

/** The first `count` choice letters: `choiceLetters(4)` is `['A', 'B', 'C', 'D']`. */
export function choiceLetters(count: number): string[] {
  if (!Number.isInteger(count) || count < 1 || count > 26) throw new RangeError(`choice count must be 1 to 26, got ${count}`);
  return Array.from({ length: count }, (_, i) => String.fromCharCode(65 + i));
}

// Node 20 has no inline `(?i:…)`: phrases are made case-insensitive letter by letter, so that the letter itself stays
// case-sensitive ("the answer is a dog" claims nothing).
const anyCase = (word: string) => word.replace(/[a-z]/g, (c) => `[${c}${c.toUpperCase()}]`).replace(/ /g, String.raw`\s+`);
const oneOf = (...list: string[]) => `(?:${list.map(anyCase).join('|')})`;

interface Patterns {
  /** Answers stated as such, anywhere in the text. */
  explicit: RegExp[];
  /** A line that is only the letter; tried on the first and last lines. */
  bare: RegExp[];
  /** A letter set apart in bold or brackets, anywhere. */
  marked: RegExp[];
}

function compile(letters: string): Patterns {
  const L = `(?<letter>[${letters}])`;
  const alone = '(?![A-Za-z0-9])';
  const open = String.raw`[\s*_]*[(\[]?[\s*_]*`;
  const phrase =
    String.raw`\b${oneOf('final ', 'correct ', 'best ', 'right ', '')}${oneOf('answer', 'option', 'choice')}\b` +
    String.raw`(?:\s+${oneOf('to this question', 'to the question')})?` +
    String.raw`[\s*_]*(?:${oneOf('is', 'would be', 'should be', 'must be', 'will be')}\b|[:=])[\s*_:]*` +
    String.raw`(?:${oneOf('option', 'choice', 'letter')}\s*)?`;
  return {
    explicit: [
      new RegExp(String.raw`\\boxed\s*\{\s*(?:\\text(?:bf|rm)?\s*\{\s*)?[(\[]?\s*${L}${alone}`, 'g'),
      new RegExp(String.raw`<${anyCase('answer')}>${open}${L}${alone}`, 'g'),
      new RegExp(`${phrase}${open}${L}${alone}`, 'g'),
      // "B is correct", "(B) is the right answer", "Option B is correct".
      new RegExp(
        String.raw`(?<![A-Za-z0-9])[(\[]?${L}[)\]]?[*_]*\s+${anyCase('is')}\s+(?:${anyCase('the')}\s+)?${oneOf('correct', 'right', 'best')}\b`,
        'g',
      ),
    ],
    bare: [
      new RegExp(String.raw`^[\s#>*_]*[(\[][\s*_]*${L}[\s*_]*[)\]]`, 'g'),
      new RegExp(String.raw`^[\s#>*_]*${L}(?=[*_]*(?:[.:)]|\s*$))`, 'g'),
    ],
    marked: [new RegExp(String.raw`\*\*[(\[]?${L}[)\]]?[.:)]?\*\*`, 'g'), new RegExp(String.raw`(?<![A-Za-z0-9])[(\[]${L}[)\]]`, 'g')],
  };
}

const compiled = new Map<string, Patterns>();

function patternsFor(letters: readonly string[]): Patterns {
  const key = letters.join('');
  let patterns = compiled.get(key);
  if (!patterns) {
    if (letters.length === 0 || !letters.every((l) => /^[A-Z]$/.test(l))) {
      throw new RangeError(`choice letters must be single capitals A-Z, got ${JSON.stringify(letters)}`);
    }
    patterns = compile(key);
    compiled.set(key, patterns);
  }
  return patterns;
}

/** The first and last non-empty lines: where a bare letter answers. */
function endLines(text: string): string[] {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  return lines.length <= 1 ? lines : [lines[0]!, lines.at(-1)!];
}

/**
 * The choice a completion settles on, or null when it names none, or several. Only the text after the last `</think>`
 * counts ({@link stripThinking}); an open `<think>` is no answer. In order of authority:
 *
 * 1. answers stated as such: `\boxed{B}`, `<answer>B</answer>`, "The answer is (B)", "Answer: **B**", "the correct
 *    option is B", "Final answer: choice B", "(B) is correct";
 * 2. a reply that is only the letter, on its first or last line: "B", "B.", "**B**", "(B) Paris", "B) Paris";
 * 3. a letter set apart in bold or brackets anywhere: "I'd go with **C**", "so (C) fits".
 *
 * The first of these that finds a letter decides, and it must find only one: "The answer is A. No, the answer is B."
 * claims two and is ambiguous (null); the same letter repeated is fine. Letters are capitals only, so the article in
 * "the answer is a dog" claims nothing.
 * @param letters the valid letters, as a string (`'ABCDE'`) or a list; no other letter is ever returned. @default 'ABCD'
 */
export function extractChoiceLetter(text: string, letters: string | readonly string[] = 'ABCD'): string | null {
  const answer = stripThinking(text);
  if (answer === null) return null;
  const { explicit, bare, marked } = patternsFor(typeof letters === 'string' ? [...letters] : letters);
  const tiers: [RegExp[], string[]][] = [
    [explicit, [answer]],
    [bare, endLines(answer)],
    [marked, [answer]],
  ];
  for (const [patterns, places] of tiers) {
    const found = new Set<string>();
    for (const pattern of patterns) {
      for (const place of places) for (const match of place.matchAll(pattern)) found.add(match.groups!.letter!);
    }
    if (found.size > 0) return found.size === 1 ? [...found][0]! : null;
  }
  return null;
}
