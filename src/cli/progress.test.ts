import { describe, expect, it } from 'vitest';
import type { EnvRunStatus, EvalProgress } from '../schema/rollout.js';
import { evaluationLine, evaluationsLine, progressLine } from './progress.js';

const status = (evaluation?: EvalProgress): EnvRunStatus => ({
  nextItem: 4,
  completed: 4,
  delivered: 4,
  failed: 0,
  dropped: {},
  failures: [],
  scoreSum: 2,
  scoredGroups: 4,
  total: 10,
  inFlight: 1,
  ...(evaluation ? { evaluation } : {}),
});
const evaluation = (over: Partial<EvalProgress>): EvalProgress => ({
  seenStep: 4,
  running: null,
  started: 0,
  skipped: 0,
  failed: 0,
  results: [],
  ...over,
});
const result = { step: 2, metrics: { items: 2, score: 0, correct: 0.5 }, percentCorrect: 0.5 };

describe('progress of a run that evaluates during training', () => {
  it('prints each evaluation with its step and every metric', () => {
    expect(evaluationLine(result)).toBe('evaluation at step 2: percent_correct 0.500 · items 2 · score 0 · correct 0.500');
    expect(evaluationLine({ ...result, percentCorrect: null })).toBe('evaluation at step 2: items 2 · score 0 · correct 0.500');
  });

  it('shows the running or newest evaluation on the progress line, and nothing without evaluation', () => {
    expect(progressLine(status(), 1000, 0)).not.toContain('eval');
    expect(progressLine(status(evaluation({ running: 4, started: 1 })), 1000, 0)).toMatch(/ · evaluating at step 4$/);
    expect(progressLine(status(evaluation({ started: 1, results: [result] })), 1000, 0)).toMatch(/ · eval at step 2: score 0\.000$/);
  });

  it('shows no total for a run the trainer ends (serve)', () => {
    expect(progressLine({ ...status(), total: Number.MAX_SAFE_INTEGER, completed: 3 }, 1000, 0)).toMatch(/^groups 3 · /);
    expect(progressLine({ ...status(), total: 8, completed: 3 }, 1000, 0)).toMatch(/^groups 3\/8 · /);
  });

  it('counts evaluations done, skipped and failed at the end', () => {
    expect(evaluationsLine(evaluation({ started: 3, skipped: 2, failed: 1, running: 6 }))).toBe('evaluations 1 (skipped 2, failed 1)');
  });
});
