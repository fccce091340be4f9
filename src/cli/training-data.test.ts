import { describe, expect, it } from 'vitest';
import { commonPrefix, dpoPairs, messagesView, seededRandom, sftRecords, textView, type GroupView } from './training-data.js';

/** A chat per sample: the same question, answer `a<i>`. */
const chats = (n: number) =>
  Array.from({ length: n }, (_, i) => [
    { role: 'user', content: 'q' },
    { role: 'assistant', content: `a${i}` },
  ]);
const lines = (records: object[]) => records.map((r) => JSON.stringify(r));
const sft = { topN: 3, allowNegativeScores: false, minimumScoreDiff: 0 };

describe('SFT selection (atropos-sft-gen)', () => {
  const scores = [0.5, 1, -1, 1, 0];
  const view = messagesView({ scores, messages: chats(5) });

  it('keeps the top n by score, ties in group order, without scores of 0 or less', () => {
    expect(lines(sftRecords(scores, view, sft))).toEqual([
      '{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a1"}],"score":1}',
      '{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a3"}],"score":1}',
      '{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a0"}],"score":0.5}',
    ]);
    expect(sftRecords(scores, view, { ...sft, topN: 2 }).map((r) => r.score)).toEqual([1, 1]);
    expect(sftRecords(scores, view, { ...sft, topN: 0 })).toEqual([]);
  });

  it('keeps scores of 0 or less with allowNegativeScores', () => {
    const all = sftRecords(scores, view, { ...sft, topN: 5, allowNegativeScores: true });
    expect(all.map((r) => ('messages' in r ? r.messages[1]!.content : null))).toEqual(['a1', 'a3', 'a0', 'a4', 'a2']);
    expect(all.map((r) => r.score)).toEqual([1, 1, 0.5, 0, -1]);
  });

  it('keeps only sequences more than minimumScoreDiff above the group minimum', () => {
    // Lowest is -1: 1 - (-1) = 2 > 1.5 passes; 0.5 - (-1) = 1.5 does not.
    const kept = sftRecords(scores, view, { ...sft, topN: 5, allowNegativeScores: true, minimumScoreDiff: 1.5 });
    expect(kept.map((r) => r.score)).toEqual([1, 1]);
  });

  it('writes the tools the model was offered beside the messages, when the group records any', () => {
    const tools = [{ type: 'function', function: { name: 'add', parameters: { type: 'object' } } }];
    const [record] = sftRecords([1], messagesView({ scores: [1], messages: chats(1), tools }), sft);
    expect(record).toEqual({ messages: chats(1)[0], score: 1, tools });
    const [pair] = dpoPairs(
      [1, -1],
      messagesView({ scores: [1, -1], messages: chats(2), tools }),
      { nPairs: 1, allowNegativeScores: false, minimumScoreDiff: 0 },
      () => 0,
    );
    expect(pair).toEqual({ pos: chats(2)[0], score: 1, neg: chats(2)[1], tools });
    // None offered (null, or an empty list): no tools key, as before.
    expect(sftRecords([1], messagesView({ scores: [1], messages: chats(1), tools: [] }), sft)[0]).not.toHaveProperty('tools');
  });

  it('writes text records as the shared prefix and each completion', () => {
    const text = textView(['<|im_start|>user\nq<|im_end|>\nA: 4', '<|im_start|>user\nq<|im_end|>\nA: 5']);
    expect(lines(sftRecords([1, -1], text, sft))).toEqual(['{"prefix":"<|im_start|>user\\nq<|im_end|>\\nA: ","completion":"4","score":1}']);
  });
});

describe('DPO pairing (atropos-dpo-gen)', () => {
  const scores = [1, 0, 0.2, -1, 0.9];
  const view: GroupView = { kind: 'text', prefix: 'Q: ', completions: ['s0', 's1', 's2', 's3', 's4'] };
  const dpo = { nPairs: 3, allowNegativeScores: false, minimumScoreDiff: 0.5 };

  it('pairs each of the best sequences with a worse one, each rejected one used once', () => {
    // Chosen candidates: s0 (1), s4 (0.9), s2 (0.2); rejected candidates: s3 (-1), s1 (0), s2 (0.2).
    // s0 takes the first of s3, s1, s2; s4 the first of s1, s2 (below 0.4); s2 has none below -0.3 left.
    expect(lines(dpoPairs(scores, view, dpo, () => 0))).toEqual([
      '{"prefix":"Q: ","pos":"s0","score":1,"neg":"s3"}',
      '{"prefix":"Q: ","pos":"s4","score":0.9,"neg":"s1"}',
    ]);
    // Picking the last candidate each time leaves s3 for s2.
    expect(lines(dpoPairs(scores, view, dpo, () => 0.99))).toEqual([
      '{"prefix":"Q: ","pos":"s0","score":1,"neg":"s2"}',
      '{"prefix":"Q: ","pos":"s4","score":0.9,"neg":"s1"}',
      '{"prefix":"Q: ","pos":"s2","score":0.2,"neg":"s3"}',
    ]);
  });

  it('takes rejected ones from the n lowest only, and at most n pairs', () => {
    expect(lines(dpoPairs(scores, view, { ...dpo, nPairs: 1 }, () => 0.99))).toEqual(['{"prefix":"Q: ","pos":"s0","score":1,"neg":"s3"}']);
    expect(dpoPairs(scores, view, { ...dpo, nPairs: 0 }, () => 0)).toEqual([]);
  });

  it('needs a score difference above minimumScoreDiff; equal scores make no pair', () => {
    expect(dpoPairs([1, 0.6], { kind: 'text', prefix: '', completions: ['a', 'b'] }, dpo, () => 0)).toEqual([]);
    expect(
      dpoPairs([1, 1, 1], { kind: 'text', prefix: '', completions: ['a', 'b', 'c'] }, { ...dpo, minimumScoreDiff: 0 }, () => 0),
    ).toEqual([]);
  });

  it('lets negative-scoring sequences be chosen with allowNegativeScores', () => {
    const pairs = dpoPairs([-0.5, -2], { kind: 'text', prefix: '', completions: ['a', 'b'] }, dpo, () => 0);
    expect(pairs).toEqual([]);
    expect(
      lines(dpoPairs([-0.5, -2], { kind: 'text', prefix: '', completions: ['a', 'b'] }, { ...dpo, allowNegativeScores: true }, () => 0)),
    ).toEqual(['{"prefix":"","pos":"a","score":-0.5,"neg":"b"}']);
  });

  it('writes messages pairs as {pos, score, neg}', () => {
    expect(lines(dpoPairs([0, 1], messagesView({ scores: [0, 1], messages: chats(2) }), dpo, () => 0))).toEqual([
      '{"pos":[{"role":"user","content":"q"},{"role":"assistant","content":"a1"}],"score":1,"neg":[{"role":"user","content":"q"},{"role":"assistant","content":"a0"}]}',
    ]);
  });
});

describe('views and helpers', () => {
  it('finds the common prefix at whole code points', () => {
    expect(commonPrefix(['abc', 'abd', 'ab'])).toBe('ab');
    expect(commonPrefix(['same', 'same'])).toBe('same');
    expect(commonPrefix([])).toBe('');
    // 😀 and 😁 share their first UTF-16 unit; a prefix must not end inside the pair.
    expect(commonPrefix(['x😀', 'x😁'])).toBe('x');
    expect(textView(['x😀', 'x😁'])).toEqual({ kind: 'text', prefix: 'x', completions: ['😀', '😁'] });
  });

  it('refuses a group without messages, naming the way out', () => {
    expect(() => messagesView({ scores: [1], messages: null })).toThrow(/--tokenizer/);
    expect(() => messagesView({ scores: [1, 0], messages: chats(1) })).toThrow(/1 message lists for 2 scores/);
  });

  it('repeats its random picks for a seed', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const draws = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(draws);
    expect(draws.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(new Set(draws).size).toBe(5);
    expect(seededRandom(8)()).not.toBe(draws[0]);
  });
});
