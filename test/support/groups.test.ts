import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MASKED as M, MASKED_LOGPROB as ML, ScoredDataGroupSchema, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { expectWellFormedGroup, expectWellFormedSequence, readGroups } from './groups.js';

/** A group of one sequence: a 2-token prompt, a 2-token turn, a 1-token tool answer and a 1-token turn. */
const group = (change: (g: { tokens: number[]; masks: number[]; logprobs: number[] }) => void = () => {}): ScoredDataGroup => {
  const g = { tokens: [1, 2, 3, 4, 5, 6], masks: [M, M, 3, 4, M, 6], logprobs: [ML, ML, -0.5, 0, ML, -2] };
  change(g);
  return ScoredDataGroupSchema.parse({ tokens: [g.tokens], masks: [g.masks], scores: [1], inference_logprobs: [g.logprobs] });
};

describe('expectWellFormedSequence', () => {
  it('returns the trained spans of a well-formed sequence', () => {
    expect(expectWellFormedSequence(group(), 0)).toEqual([
      { start: 2, end: 4 },
      { start: 5, end: 6 },
    ]);
    expect(expectWellFormedGroup(group(), { maxTrained: 3 })).toEqual([
      [
        { start: 2, end: 4 },
        { start: 5, end: 6 },
      ],
    ]);
    expect(
      expectWellFormedSequence(
        group((g) => {
          g.masks[0] = 1;
          g.logprobs[0] = -1;
        }),
        0,
      )[0],
    ).toEqual({ start: 0, end: 1 });
  });

  it('fails on each way a sequence can be malformed', () => {
    const malformed: [string, ScoredDataGroup][] = [
      ['a mask short', group((g) => g.masks.pop())],
      ['logprobs short', group((g) => g.logprobs.pop())],
      ['no logprobs', { ...group(), inference_logprobs: null }],
      ['a trained mask not its token', group((g) => (g.masks[2] = 9))],
      ['a trained logprob above 0', group((g) => (g.logprobs[3] = 0.1))],
      ['a masked logprob not MASKED_LOGPROB', group((g) => (g.logprobs[4] = -1))],
      [
        'nothing trained',
        group((g) => {
          g.masks = g.masks.map(() => M);
          g.logprobs = g.logprobs.map(() => ML);
        }),
      ],
    ];
    for (const [why, g] of malformed) expect(() => expectWellFormedSequence(g, 0), why).toThrow();
    expect(() => expectWellFormedGroup(group(), { maxTrained: 2 })).toThrow();
  });
});

describe('readGroups', () => {
  it('reads one group a line, skipping blank lines', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-groups-'));
    try {
      const path = join(dir, 'groups.jsonl');
      await writeFile(path, `${JSON.stringify(group())}\n\n${JSON.stringify(group())}\n`);
      expect(await readGroups(path)).toEqual([group(), group()]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
