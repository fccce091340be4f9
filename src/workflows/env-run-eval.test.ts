import { describe, expect, it } from 'vitest';
import type { EvalSchedule } from '../schema/rollout.js';
import { evaluationDue, initialEvalProgress, recordEvaluation, recordEvaluationFailure, trainingLimit } from './env-run-eval.js';

const schedule = (handling: EvalSchedule['handling'], limitRatio = 0.5): EvalSchedule => ({
  everySteps: 2,
  handling,
  limitRatio,
  run: {
    runId: 'r',
    environment: 'e',
    items: 1,
    maxTurns: 1,
    concurrency: 1,
    taskQueue: 'q',
    activity: {} as EvalSchedule['run']['activity'],
  },
});

describe('evaluation during training', () => {
  it('is due when the step crosses a multiple of steps_per_eval, never at the step first seen', () => {
    const progress = initialEvalProgress();
    const due = (step: number) => {
      const at = evaluationDue(progress, step, 2);
      if (at !== null) recordEvaluation(progress, { step: at, metrics: {}, percentCorrect: null });
      return at;
    };
    // Registered at step 4 (a resumed trainer): nothing due until 6.
    expect([4, 4, 5, 6, 6, 7, 8].map(due)).toEqual([null, null, null, 6, null, null, 8]);
    // A jump by a whole multiple crosses it (Atropos's modulo check misses 8 → 10).
    expect(due(10)).toBe(10);
    expect(due(13)).toBe(13);
    expect(progress).toMatchObject({ started: 4, skipped: 0, running: null });
    expect(progress.results.map((r) => r.step)).toEqual([6, 8, 10, 13]);
  });

  it('skips and counts a due evaluation while one still runs, as Atropos does', () => {
    const progress = initialEvalProgress();
    evaluationDue(progress, 1, 2);
    expect(evaluationDue(progress, 2, 2)).toBe(2);
    expect(evaluationDue(progress, 4, 2)).toBeNull();
    expect(progress).toMatchObject({ running: 2, started: 1, skipped: 1 });
    recordEvaluationFailure(progress, 2, 'inference gave up');
    expect(progress).toMatchObject({ running: null, failed: 1, lastFailure: { step: 2, message: 'inference gave up' } });
    expect(evaluationDue(progress, 6, 2)).toBe(6);
  });

  it('never evaluates with steps_per_eval 0 or less', () => {
    const progress = initialEvalProgress();
    expect([0, 1, 2, 100].map((step) => evaluationDue(progress, step, 0))).toEqual([null, null, null, null]);
  });

  it('limits training while an evaluation runs: none with STOP_TRAIN, eval_limit_ratio with LIMIT_TRAIN, all with NONE', () => {
    const running = { ...initialEvalProgress(), running: 2 };
    const idle = initialEvalProgress();
    expect(trainingLimit(schedule('STOP_TRAIN'), running, 8)).toBe(0);
    expect(trainingLimit(schedule('LIMIT_TRAIN', 0.3), running, 8)).toBe(2);
    expect(trainingLimit(schedule('NONE'), running, 8)).toBe(8);
    for (const handling of ['STOP_TRAIN', 'LIMIT_TRAIN', 'NONE'] as const) expect(trainingLimit(schedule(handling), idle, 8)).toBe(8);
    expect(trainingLimit(undefined, undefined, 8)).toBe(8);
  });

  it('keeps the newest results only', () => {
    const progress = initialEvalProgress();
    for (let step = 1; step <= 30; step++) recordEvaluation(progress, { step, metrics: {}, percentCorrect: null });
    expect(progress.results).toHaveLength(20);
    expect(progress.results[0]!.step).toBe(11);
  });
});
