import { describe, expect, it } from 'vitest';
import { comparisons, judgeRequests, scoreSample, type JudgingConfig, type Response } from './scoring.js';

const A = 'I weighed both. \\boxed{A}';
const B = '\\boxed{B}';
const NONE = 'Both have merits.';
const live = (text: string): Response => ({ text, truncated: false });
const cut: Response = { text: 'and then', truncated: true };
const config: JudgingConfig = { compare: 'pairs', criteria: 'Be right.', judge_votes: 2, judge_max_tokens: 128, judge_temperature: 1 };
const item = { prompt: [{ role: 'user', content: 'Name a colour.' }], reference: 'Red.' };

describe('comparisons', () => {
  it('pairs every finished sample, falls back on the reference for a lone one, or compares each with the reference', () => {
    expect(comparisons([true, true, true], true, 'pairs').map((c) => c.id)).toEqual(['0-1', '0-2', '1-2']);
    expect(comparisons([true, false, true], true, 'pairs').map((c) => c.id)).toEqual(['0-2']);
    expect(comparisons([false, true], true, 'pairs')).toEqual([{ id: '1-reference', first: 1, second: 'reference' }]);
    expect(comparisons([true], false, 'pairs')).toEqual([]);
    expect(comparisons([false, false], true, 'pairs')).toEqual([]);
    expect(comparisons([true, false, true], true, 'reference').map((c) => c.id)).toEqual(['0-reference', '2-reference']);
  });

  it('asks each comparison forward and reversed with the configured votes and sampling', () => {
    const requests = judgeRequests(item, [live('Blue.'), cut, live('Green.')], config);
    expect(requests.map((r) => r.id)).toEqual(['0-2/forward', '0-2/reversed']);
    for (const r of requests) expect(r).toMatchObject({ n: 2, maxTokens: 128, temperature: 1 });
    expect(String(requests[0]!.messages[1]!.content)).toContain('[Response A]\nBlue.\n\n[Response B]\nGreen.');
    expect(String(requests[1]!.messages[1]!.content)).toContain('[Response A]\nGreen.\n\n[Response B]\nBlue.');
    expect(String(requests[0]!.messages[1]!.content)).toContain('[Conversation]\nuser: Name a colour.');
    const versusReference = judgeRequests(item, [live('Blue.')], config);
    expect(String(versusReference[0]!.messages[1]!.content)).toContain('[Response A]\nBlue.\n\n[Response B]\nRed.');
  });
});

describe('scoreSample', () => {
  it("averages each sample's preference over its pairs, votes counted by hand", () => {
    // 0-1: forward A A, reversed B none → 0: 3 votes, 1: 0, 1 unparsed of 4 → 0.875 / 0.125.
    // 0-2: forward B B, reversed A A → 2 takes all four → 0 / 1.
    // 1-2: forward A none, reversed A B → 1: 2, 2: 1, 1 unparsed → 0.625 / 0.375.
    const judgements = {
      '0-1/forward': [A, A],
      '0-1/reversed': [B, NONE],
      '0-2/forward': [B, B],
      '0-2/reversed': [A, A],
      '1-2/forward': [A, NONE],
      '1-2/reversed': [A, B],
    };
    const results = [0, 1, 2].map((s) => scoreSample(s, live('x'), judgements, 'pairs'));
    expect(results.map((r) => r.score)).toEqual([(0.875 + 0) / 2 - 0.5, (0.125 + 0.625) / 2 - 0.5, (1 + 0.375) / 2 - 0.5]);
    expect(results.reduce((sum, r) => sum + r.score, 0)).toBeCloseTo(0, 12);
    for (const r of results) expect(r.metrics).toEqual({ votes: 12, unparsed_votes: 2, truncated: 0 });
  });

  it("is Atropos's score for a pair: (for − against) / (2 × votes), unreadable votes no preference", () => {
    const judgements = { '0-1/forward': [A, A, NONE], '0-1/reversed': [B, A, B] };
    // For 0: 2 + 2 = 4, against 1, one unparsed, of 6.
    expect(scoreSample(0, live('x'), judgements, 'pairs').score).toBeCloseTo((4 - 1) / 12, 12);
    expect(scoreSample(1, live('y'), judgements, 'pairs').score).toBeCloseTo((1 - 4) / 12, 12);
  });

  it('scores a cut-off sample −1 without the judge, and its finished partner against the reference', () => {
    // Forward A A, reversed A B: the sample gets 2 + 1 of 4 against the reference.
    const judgements = { '0-reference/forward': [A, A], '0-reference/reversed': [A, B] };
    expect(scoreSample(0, live('Blue.'), judgements, 'pairs')).toEqual({
      score: 0.25,
      metrics: { votes: 4, unparsed_votes: 0, truncated: 0, win_rate: 0.75 },
    });
    expect(scoreSample(1, cut, judgements, 'pairs')).toEqual({ score: -1, metrics: { votes: 4, unparsed_votes: 0, truncated: 1 } });
    expect(scoreSample(1, cut, judgements, 'reference').metrics).toMatchObject({ win_rate: 0 });
  });

  it('scores 0 a sample compared with nothing', () => {
    expect(scoreSample(0, live('alone'), {}, 'pairs')).toEqual({ score: 0, metrics: { votes: 0, unparsed_votes: 0, truncated: 0 } });
  });
});
