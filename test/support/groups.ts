/** Scored groups read back from the files runs write, and their token fields checked as a trainer reads them. */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { expect } from 'vitest';
import { MASKED, MASKED_LOGPROB, type ScoredDataGroup } from '../../src/schema/scored-data.js';

/** The records of a JSON-lines file, one a line (blank lines skipped). */
export async function readJsonl<T>(path: string): Promise<T[]> {
  return (await readFile(path, 'utf8'))
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line) as T);
}

/** How many whole lines a JSON-lines file being written holds (0 before it exists): a poll must not parse a half-written one. */
export async function completeLines(path: string): Promise<number> {
  return existsSync(path) ? (await readFile(path, 'utf8')).split('\n').length - 1 : 0;
}

/** The groups a run wrote with `--env.data_path_to_save_groups`. */
export function readGroups(path: string): Promise<ScoredDataGroup[]> {
  return readJsonl<ScoredDataGroup>(path);
}

/** Consecutive trained positions of a sequence: tokens `start` to `end` (exclusive). */
export interface TrainedSpan {
  start: number;
  end: number;
}

/**
 * Checks sequence `i` of a group as a trainer reads it and returns its trained spans: masks and inference_logprobs
 * as long as the tokens; a masked position has MASKED_LOGPROB; a trained position's mask is its token and its logprob
 * is at most 0; at least one trained position, and at most `maxTrained` when given.
 */
export function expectWellFormedSequence(group: ScoredDataGroup, i: number, options: { maxTrained?: number } = {}): TrainedSpan[] {
  const tokens = group.tokens[i]!;
  const masks = group.masks[i]!;
  const logprobs = group.inference_logprobs?.[i];
  expect(masks).toHaveLength(tokens.length);
  expect(logprobs).toHaveLength(tokens.length);
  const spans: TrainedSpan[] = [];
  let trained = 0;
  masks.forEach((m, j) => {
    if (m === MASKED) return void expect(logprobs![j]).toBe(MASKED_LOGPROB);
    trained++;
    expect(m).toBe(tokens[j]);
    expect(logprobs![j]).toBeLessThanOrEqual(0);
    if (j > 0 && masks[j - 1] !== MASKED) spans.at(-1)!.end = j + 1;
    else spans.push({ start: j, end: j + 1 });
  });
  expect(trained).toBeGreaterThan(0);
  if (options.maxTrained !== undefined) expect(trained).toBeLessThanOrEqual(options.maxTrained);
  return spans;
}

/** {@link expectWellFormedSequence} for every sequence of the group: each one's trained spans. */
export function expectWellFormedGroup(group: ScoredDataGroup, options: { maxTrained?: number } = {}): TrainedSpan[][] {
  return group.tokens.map((_, i) => expectWellFormedSequence(group, i, options));
}
