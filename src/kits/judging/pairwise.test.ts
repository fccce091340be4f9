import { describe, expect, it } from 'vitest';
import {
  formatConversation,
  judgedPair,
  pairwiseJudgePrompt,
  pairwiseRequests,
  parseBoxedChoice,
  preferenceOf,
  tallyPairwise,
  PAIRWISE_JUDGE_SYSTEM_PROMPT,
} from './pairwise.js';

const conversation = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Name a primary colour.' },
];

describe('parseBoxedChoice', () => {
  it('reads the last boxed letter, formatted or not', () => {
    expect(parseBoxedChoice('I prefer the first. \\boxed{A}')).toBe('A');
    expect(parseBoxedChoice('\\boxed{A} at first, but on reflection \\boxed{B}.')).toBe('B');
    expect(parseBoxedChoice('\\boxed{ \\text{B} }')).toBe('B');
    expect(parseBoxedChoice('\\boxed{\\textbf{Response A}}')).toBe('A');
    expect(parseBoxedChoice('\\boxed {(b)}')).toBe('B');
    expect(parseBoxedChoice('<think>maybe \\boxed{B}?</think>Final: \\boxed{A}')).toBe('A');
  });

  it('gives null for no verdict, a verdict that names neither, or a thought cut off', () => {
    expect(parseBoxedChoice('Both are fine.')).toBeNull();
    expect(parseBoxedChoice('Answer with \\boxed{A or B}')).toBeNull();
    expect(parseBoxedChoice('\\boxed{C}')).toBeNull();
    expect(parseBoxedChoice('\\boxed{A')).toBeNull();
    expect(parseBoxedChoice('<think>B looks right: \\boxed{B}')).toBeNull();
    expect(parseBoxedChoice('')).toBeNull();
  });

  it('accepts other choice sets', () => {
    expect(parseBoxedChoice('\\boxed{tie}', ['A', 'B', 'TIE'])).toBe('TIE');
  });
});

describe('pairwise prompts and requests', () => {
  it('shows the conversation, both responses and the criteria, and asks for a boxed letter', () => {
    expect(formatConversation(conversation)).toBe('system: Be brief.\nuser: Name a primary colour.');
    const [system, user] = pairwiseJudgePrompt({ conversation, responseA: 'Red.', responseB: 'Teal.', criteria: 'Correct.' });
    expect(system).toEqual({ role: 'system', content: PAIRWISE_JUDGE_SYSTEM_PROMPT });
    const text = String(user!.content);
    expect(text.indexOf('[Conversation]\nsystem: Be brief.\nuser: Name a primary colour.')).toBe(0);
    expect(text.indexOf('[Response A]\nRed.')).toBeLessThan(text.indexOf('[Response B]\nTeal.'));
    expect(text).toContain('Correct.');
    expect(text).toMatch(/\\boxed\{A\} or \\boxed\{B\}\.$/);
  });

  it('asks each comparison in both orders with the same votes and sampling', () => {
    const [forward, reversed] = pairwiseRequests({
      id: '0-1',
      conversation,
      first: 'Red.',
      second: 'Teal.',
      criteria: 'Correct.',
      votes: 3,
      maxTokens: 64,
      temperature: 0.7,
    });
    expect(forward).toMatchObject({ id: '0-1/forward', n: 3, maxTokens: 64, temperature: 0.7 });
    expect(reversed).toMatchObject({ id: '0-1/reversed', n: 3, maxTokens: 64, temperature: 0.7 });
    const user = (r: typeof forward) => String(r.messages[1]!.content);
    expect(user(forward)).toContain('[Response A]\nRed.\n\n[Response B]\nTeal.');
    expect(user(reversed)).toContain('[Response A]\nTeal.\n\n[Response B]\nRed.');
    const [plain] = pairwiseRequests({ id: 'x', conversation, first: 'a', second: 'b', criteria: 'c', votes: 1 });
    expect(plain).not.toHaveProperty('temperature');
    expect(plain).not.toHaveProperty('maxTokens');
  });
});

describe('tallies and preferences', () => {
  it('counts A forward and B reversed for the first response, and unreadable answers apart', () => {
    // Forward: A, A, none. Reversed: B (first), A (second), none. First 3, second 1, unparsed 2 of 6.
    const tally = tallyPairwise(['\\boxed{A}', 'x \\boxed{A}', 'no idea'], ['\\boxed{B}', '\\boxed{A}', '\\boxed{A or B}']);
    expect(tally).toEqual({ first: 3, second: 1, unparsed: 2, votes: 6 });
    // Unparsed votes split evenly: (3 + 1) / 6 and (1 + 1) / 6.
    expect(preferenceOf(tally)).toBeCloseTo(4 / 6, 12);
    expect(preferenceOf(tally, 'second')).toBeCloseTo(2 / 6, 12);
  });

  it("is Atropos's centred score minus one half: (for − against) / (2 × votes)", () => {
    const tally = tallyPairwise(['\\boxed{A}', '\\boxed{B}', '\\boxed{A}'], ['\\boxed{B}', '\\boxed{B}', 'none']);
    expect(tally).toEqual({ first: 4, second: 1, unparsed: 1, votes: 6 });
    expect(preferenceOf(tally) - 0.5).toBeCloseTo((4 - 1) / 12, 12);
    expect(preferenceOf(tally, 'second') - 0.5).toBeCloseTo((1 - 4) / 12, 12);
  });

  it('is one half without votes, and reads a comparison from judgements only when it was asked', () => {
    expect(preferenceOf({ first: 0, second: 0, unparsed: 0, votes: 0 })).toBe(0.5);
    const judgements = { '0-1/forward': ['\\boxed{B}'], '0-1/reversed': ['\\boxed{A}'] };
    expect(judgedPair(judgements, '0-1')).toEqual({ first: 0, second: 2, unparsed: 0, votes: 2 });
    expect(judgedPair(judgements, '0-2')).toBeNull();
  });
});
