import { describe, expect, it } from 'vitest';
import { checkCall, checkCalls, standardizeString, type BfclFunction, type ExpectedCall, type ModelCall } from './checker.js';

// A function in BFCL's format, with every kind of parameter the checker treats differently.
const book: BfclFunction = {
  name: 'travel.book_room',
  description: 'Books a hotel room.',
  parameters: {
    type: 'dict',
    properties: {
      nights: { type: 'integer' },
      budget: { type: 'float' },
      city: { type: 'string' },
      breakfast: { type: 'boolean' },
      guests: { type: 'array', items: { type: 'string' } },
      location: { type: 'tuple', items: { type: 'float' } },
      preferences: { type: 'dict', properties: { floor: { type: 'string' }, view: { type: 'string' } } },
      rooms: { type: 'array', items: { type: 'dict', properties: { beds: { type: 'integer' }, kind: { type: 'string' } } } },
      note: { type: 'any' },
    },
    required: ['nights', 'city'],
  },
};

const expected: ExpectedCall = {
  name: 'travel.book_room',
  arguments: {
    nights: [3],
    budget: [250.0, ''],
    city: ['New York, NY', 'NYC'],
    breakfast: [true, ''],
    guests: [['Ann Lee', 'Bo'], ''],
    location: [[40.5, -73.9], ''],
    preferences: [{ floor: ['high', ''], view: ['park'] }, ''],
    rooms: [
      [
        { beds: [2], kind: ['double', 'queen'] },
        { beds: [1], kind: ['single'] },
      ],
      '',
    ],
  },
};

const call = (args: Record<string, unknown>): ModelCall => ({ name: 'travel.book_room', arguments: { nights: 3, city: 'NYC', ...args } });
const check = (args: Record<string, unknown>) => checkCall(book, call(args), expected);
const errorOf = (args: Record<string, unknown>) => {
  const result = check(args);
  return result.valid ? null : result.error;
};

describe('checkCall: BFCL rules for one call', () => {
  it('accepts the required parameters alone when every optional one may be left out', () => {
    expect(check({})).toEqual({ valid: true });
  });

  it('accepts an int for a float, and rejects a fractional number for an integer', () => {
    expect(check({ budget: 250 })).toEqual({ valid: true });
    expect(errorOf({ nights: 2.5 })).toMatch(/^wrong type 2.5 for parameter 'nights': expected integer/);
    expect(errorOf({ nights: '3' })).toMatch(/wrong type "3"/);
    expect(errorOf({ breakfast: 1 })).toMatch(/wrong type 1 for parameter 'breakfast'/);
  });

  it('rejects a missing required parameter, an unknown one, and a left-out one that is not optional', () => {
    expect(checkCall(book, { name: book.name, arguments: { city: 'NYC' } }, expected)).toEqual({
      valid: false,
      error: "missing required parameter 'nights'",
    });
    expect(errorOf({ pets: true })).toBe("unexpected parameter 'pets'");
    // Declared by the function but absent from the answer: BFCL counts it as unexpected too.
    expect(errorOf({ note: 'late arrival' })).toBe("unexpected parameter 'note'");
    const strict = { ...expected, arguments: { ...expected.arguments, budget: [250.0] } };
    expect(checkCall(book, call({}), strict)).toEqual({ valid: false, error: "missing parameter 'budget', which is not optional" });
  });

  it('rejects a value that is not among the acceptable ones, and the wrong function', () => {
    expect(errorOf({ nights: 4 })).toMatch(/^wrong value 4 for parameter 'nights': expected one of \[3\]/);
    expect(checkCall(book, { name: 'travel.cancel', arguments: {} }, expected)).toEqual({
      valid: false,
      error: 'wrong function: expected travel.book_room, got travel.cancel',
    });
  });

  it('compares strings standardized: case, spaces and ,./-_*^ do not count', () => {
    expect(standardizeString("New York, N.Y. 'x'")).toBe('newyorkny"x"');
    expect(check({ city: 'new york ny' })).toEqual({ valid: true });
    expect(check({ city: 'N-Y-C' })).toEqual({ valid: true });
    expect(errorOf({ city: 'Boston' })).toMatch(/wrong value "Boston"/);
  });

  it('compares lists element by element, in order, strings standardized', () => {
    expect(check({ guests: ['ann lee', 'BO'] })).toEqual({ valid: true });
    expect(errorOf({ guests: ['Bo', 'Ann Lee'] })).toMatch(/wrong value/);
    expect(errorOf({ guests: ['Ann Lee'] })).toMatch(/wrong value/);
    expect(check({ location: [40.5, -73.9] })).toEqual({ valid: true });
    // BFCL's element type check lets this through (a list has the answers' type), and the comparison rejects it.
    expect(errorOf({ location: [40.5, 'west'] })).toMatch(/wrong value/);
  });

  it('compares a nested dict key by key, its optional keys may be left out', () => {
    expect(check({ preferences: { view: 'Park' } })).toEqual({ valid: true });
    expect(check({ preferences: { view: 'park', floor: 'HIGH' } })).toEqual({ valid: true });
    expect(errorOf({ preferences: { floor: 'high' } })).toMatch(/wrong value .* for parameter 'preferences'/);
    expect(errorOf({ preferences: { view: 'park', pool: true } })).toMatch(/wrong value/);
    expect(errorOf({ preferences: 'park view' })).toMatch(/wrong type/);
  });

  it('compares a list of dicts element-wise, in order', () => {
    expect(
      check({
        rooms: [
          { beds: 2, kind: 'Queen' },
          { beds: 1, kind: 'single' },
        ],
      }),
    ).toEqual({ valid: true });
    expect(
      errorOf({
        rooms: [
          { beds: 1, kind: 'single' },
          { beds: 2, kind: 'queen' },
        ],
      }),
    ).toMatch(/wrong value/);
    expect(errorOf({ rooms: [{ beds: 2, kind: 'queen' }] })).toMatch(/wrong value/);
  });

  it('accepts a value of the answers’ own type where BFCL wrote one (a variable name, null), compared exactly', () => {
    const fn: BfclFunction = {
      name: 'f',
      parameters: { type: 'dict', properties: { xs: { type: 'array', items: { type: 'integer' } }, m: { type: 'float' } }, required: [] },
    };
    const answer: ExpectedCall = { name: 'f', arguments: { xs: ["data['sales']"], m: [null, ''] } };
    expect(checkCall(fn, { name: 'f', arguments: { xs: "data['sales']", m: null } }, answer)).toEqual({ valid: true });
    expect(checkCall(fn, { name: 'f', arguments: { xs: "DATA['sales']" } }, answer).valid).toBe(false);
  });
});

describe('checkCalls: parallel calls, any order, one-to-one', () => {
  const weather: BfclFunction = {
    name: 'weather',
    parameters: { type: 'dict', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
  };
  const time: BfclFunction = { name: 'time', parameters: { type: 'dict', properties: { zone: { type: 'string' } }, required: ['zone'] } };
  const functions = [weather, time];
  const answers: ExpectedCall[] = [
    { name: 'weather', arguments: { city: ['Paris'], days: [1, ''] } },
    { name: 'weather', arguments: { city: ['Tokyo'], days: [1, ''] } },
    { name: 'time', arguments: { zone: ['UTC'] } },
  ];
  const paris = { name: 'weather', arguments: { city: 'Paris' } };
  const tokyo = { name: 'weather', arguments: { city: 'tokyo', days: 1 } };
  const utc = { name: 'time', arguments: { zone: 'utc' } };

  it('matches calls in any order', () => {
    expect(checkCalls(functions, [utc, tokyo, paris], answers)).toEqual({ correct: true, matched: 3 });
  });

  it('does not let a duplicate call match two expected calls', () => {
    expect(checkCalls(functions, [paris, paris, utc], answers)).toEqual({ correct: false, matched: 2 });
  });

  it('fails a wrong number of calls, counting the matches', () => {
    expect(checkCalls(functions, [paris, tokyo], answers)).toEqual({ correct: false, matched: 2 });
    expect(checkCalls(functions, [paris, tokyo, utc, utc], answers)).toEqual({ correct: false, matched: 3 });
    expect(checkCalls(functions, [], answers)).toEqual({ correct: false, matched: 0 });
  });

  it('finds a one-to-one matching where matching in the expected order would take the wrong call', () => {
    const f: BfclFunction = { name: 'f', parameters: { type: 'dict', properties: { x: { type: 'integer' } }, required: ['x'] } };
    const wide: ExpectedCall = { name: 'f', arguments: { x: [1, 2] } };
    const narrow: ExpectedCall = { name: 'f', arguments: { x: [1] } };
    expect(
      checkCalls(
        [f],
        [
          { name: 'f', arguments: { x: 1 } },
          { name: 'f', arguments: { x: 2 } },
        ],
        [wide, narrow],
      ),
    ).toEqual({ correct: true, matched: 2 });
  });

  it('requires the one right function among several offered (multiple)', () => {
    expect(checkCalls(functions, [utc], [answers[2]!])).toEqual({ correct: true, matched: 1 });
    expect(checkCalls(functions, [{ name: 'weather', arguments: { city: 'UTC' } }], [answers[2]!])).toEqual({ correct: false, matched: 0 });
  });
});
