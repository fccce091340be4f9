/**
 * The Berkeley Function Calling Leaderboard's AST checker, for the Python categories: a call is right when it names
 * the expected function, gives every required parameter, no unknown one, and a value among the acceptable ones for
 * each parameter it gives (type-aware, strings standardized); a parameter may be left out when `""` is acceptable.
 */

/** A BFCL parameter schema: JSON-Schema-like, with BFCL's type names ("dict", "float", "tuple", "any"). */
export interface BfclSchema {
  type?: string;
  description?: string;
  properties?: Record<string, BfclSchema>;
  items?: BfclSchema;
  required?: string[];
  [keyword: string]: unknown;
}

/** A function offered to the model, as BFCL describes it. */
export interface BfclFunction {
  name: string;
  description?: string;
  parameters: BfclSchema;
}

/** One expected call: each parameter's acceptable values (`""` among them: the parameter may be left out). */
export interface ExpectedCall {
  name: string;
  arguments: Record<string, unknown[]>;
}

/** A call the model made, its arguments parsed from JSON. */
export interface ModelCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** Whether one call matches one expected call, and if not, why. */
export type CallCheck = { valid: true } | { valid: false; error: string };

/** How a model's calls compare with an item's expected calls. */
export interface CallsVerdict {
  /** Exactly the expected calls: as many as expected, each matching a different expected call. */
  correct: boolean;
  /** Expected calls matched one-to-one by a model call (a maximum matching). */
  matched: number;
}

type ValueType = 'string' | 'integer' | 'float' | 'boolean' | 'array' | 'dict' | 'null';

// The Python type BFCL checks each of its type names against; "any" is checked as a string, as BFCL does.
const DECLARED: Record<string, ValueType> = {
  string: 'string',
  integer: 'integer',
  float: 'float',
  boolean: 'boolean',
  array: 'array',
  tuple: 'array',
  dict: 'dict',
  any: 'string',
};

// JSON numbers lose Python's int/float distinction once parsed in JavaScript (5.0 reads as 5), so a whole number is
// an integer here; BFCL accepts an int for a float anyway, so only `5.0` written for an integer is judged differently.
function typeOf(value: unknown): ValueType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'float';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'boolean';
  return 'dict';
}

const declared = (type: string | undefined): ValueType | undefined =>
  type !== undefined && Object.hasOwn(DECLARED, type) ? DECLARED[type] : undefined;
const fits = (actual: ValueType, expected: ValueType) => actual === expected || (expected === 'float' && actual === 'integer');
const isDict = (value: unknown): value is Record<string, unknown> => typeOf(value) === 'dict';
const has = (object: object, key: string) => Object.hasOwn(object, key);

/** BFCL's string standardization: no spaces or `,./-_*^`, lower case, single quotes as double. */
export function standardizeString(text: string): string {
  return text
    .replace(/[ ,./\-_*^]/g, '')
    .toLowerCase()
    .replaceAll("'", '"');
}

/** Python's `==` on JSON values: numbers by value, lists element-wise, dicts key by key. */
export function valuesEqual(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => valuesEqual(x, b[i]));
  }
  if (isDict(a) || isDict(b)) {
    if (!isDict(a) || !isDict(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => has(b, k) && valuesEqual(a[k], b[k]));
  }
  return a === b;
}

const standardizeTop = (value: unknown) => (typeof value === 'string' ? standardizeString(value) : value);
const among = (value: unknown, options: unknown[]) => options.some((option) => valuesEqual(value, option));
// An acceptable `""` (left out) stands for an empty list where a list is compared, as in BFCL.
const asList = (answer: unknown): unknown[] | null => (Array.isArray(answer) ? answer : answer === '' ? [] : null);

/**
 * BFCL's type check. A value whose type differs from the declared one is still accepted when it has the type of the
 * acceptable answers (BFCL writes a variable's name, or a literal of another type, that way); it is then compared
 * exactly (`variable`). Array elements are checked one level deep against each acceptable list.
 */
function typeCheck(
  value: unknown,
  acceptable: unknown[],
  expected: ValueType,
  itemType: ValueType | null,
): { ok: boolean; variable: boolean } {
  const first = acceptable.find((answer) => answer !== '');
  const answerType = first === undefined ? null : typeOf(first);
  const variable = answerType !== null && !fits(answerType, expected);
  if (fits(typeOf(value), expected)) {
    if (itemType === null) return { ok: true, variable };
    const elementsFit = acceptable.some(
      (answer) => !Array.isArray(answer) || (value as unknown[]).every((element) => typeCheck(element, answer, itemType, null).ok),
    );
    if (elementsFit) return { ok: true, variable };
  }
  if (answerType !== null && typeOf(value) === answerType) return { ok: true, variable: true };
  return { ok: false, variable };
}

function dictMatches(value: Record<string, unknown>, acceptable: unknown[]): boolean {
  return acceptable.some((answer) => {
    if (!isDict(answer)) return false;
    const optionsOf = (key: string) => (Array.isArray(answer[key]) ? answer[key] : [answer[key]]).map(standardizeTop);
    return (
      Object.entries(value).every(([key, v]) => has(answer, key) && among(standardizeTop(v), optionsOf(key))) &&
      Object.keys(answer).every((key) => has(value, key) || optionsOf(key).includes(''))
    );
  });
}

function listOfDictsMatches(value: unknown[], acceptable: unknown[]): boolean {
  return acceptable.some((answer) => {
    const list = asList(answer);
    return list !== null && list.length === value.length && value.every((v, i) => isDict(v) && dictMatches(v, [list[i]]));
  });
}

function listMatches(value: unknown[], acceptable: unknown[]): boolean {
  const standardized = value.map(standardizeTop);
  return acceptable.some((answer) => {
    const list = asList(answer);
    return list !== null && valuesEqual(standardized, list.map(standardizeTop));
  });
}

/** Checks one parameter's value against its acceptable values; an error message, or null when acceptable. */
function checkValue(param: string, value: unknown, acceptable: unknown[], schema: BfclSchema): string | null {
  const expected = declared(schema.type);
  const shown = `${JSON.stringify(value)} for parameter '${param}'`;
  if (expected === undefined) return among(value, acceptable) ? null : `wrong value ${shown}`;
  const itemType = expected === 'array' ? (declared(schema.items?.type) ?? null) : null;
  const { ok, variable } = typeCheck(value, acceptable, expected, itemType);
  if (!ok) return `wrong type ${shown}: expected ${schema.type}${itemType ? ` of ${schema.items!.type}` : ''}`;
  let right: boolean;
  if (variable) right = among(value, acceptable);
  else if (expected === 'dict') right = dictMatches(value as Record<string, unknown>, acceptable);
  else if (expected === 'array' && itemType === 'dict') right = listOfDictsMatches(value as unknown[], acceptable);
  else if (expected === 'array') right = listMatches(value as unknown[], acceptable);
  else if (expected === 'string')
    right = acceptable.some((a) => typeof a === 'string' && standardizeString(a) === standardizeString(value as string));
  else right = among(value, acceptable);
  return right ? null : `wrong value ${shown}: expected one of ${JSON.stringify(acceptable)}`;
}

/** Checks one model call against one expected call, given the expected function's description. */
export function checkCall(fn: BfclFunction | undefined, call: ModelCall, expected: ExpectedCall): CallCheck {
  const fail = (error: string): CallCheck => ({ valid: false, error });
  if (call.name !== expected.name) return fail(`wrong function: expected ${expected.name}, got ${call.name}`);
  if (!fn) return fail(`no description of function ${expected.name}`);
  const properties = fn.parameters.properties ?? {};
  const missing = (fn.parameters.required ?? []).find((param) => !has(call.arguments, param));
  if (missing !== undefined) return fail(`missing required parameter '${missing}'`);
  for (const [param, value] of Object.entries(call.arguments)) {
    const acceptable = has(expected.arguments, param) ? expected.arguments[param] : undefined;
    if (!has(properties, param) || acceptable === undefined) return fail(`unexpected parameter '${param}'`);
    const error = checkValue(param, value, acceptable, properties[param]!);
    if (error !== null) return fail(error);
  }
  const omitted = Object.keys(expected.arguments).find((param) => !has(call.arguments, param) && !expected.arguments[param]!.includes(''));
  return omitted === undefined ? { valid: true } : fail(`missing parameter '${omitted}', which is not optional`);
}

/**
 * Compares a model's calls with the expected ones, in any order and one-to-one. BFCL matches greedily in the expected
 * order; a maximum matching accepts every answer that accepts (and the rare one whose greedy order goes wrong), and
 * counts the matches for partial credit.
 */
export function checkCalls(
  functions: readonly BfclFunction[],
  calls: readonly ModelCall[],
  expected: readonly ExpectedCall[],
): CallsVerdict {
  const fitsCall = expected.map((e) => {
    const fn = functions.find((f) => f.name === e.name);
    return calls.map((call) => checkCall(fn, call, e).valid);
  });
  const owner: number[] = calls.map(() => -1); // expected index each call is matched to
  // Kuhn's augmenting paths: a later expected call may take a call from an earlier one that can use another.
  const augment = (e: number, seen: boolean[]): boolean => {
    for (let c = 0; c < calls.length; c++) {
      if (!fitsCall[e]![c] || seen[c]) continue;
      seen[c] = true;
      if (owner[c] === -1 || augment(owner[c]!, seen)) {
        owner[c] = e;
        return true;
      }
    }
    return false;
  };
  let matched = 0;
  for (let e = 0; e < expected.length; e++)
    if (
      augment(
        e,
        calls.map(() => false),
      )
    )
      matched++;
  return { correct: calls.length === expected.length && matched === expected.length, matched };
}
