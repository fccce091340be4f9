import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resumableEvaluationFiles } from './evaluation-files.js';

const sample = (itemIndex: number) => ({
  itemIndex,
  messages: [],
  completion: `answer ${itemIndex}`,
  score: itemIndex % 2 ? -1 : 1,
  metrics: {},
});

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-eval-files-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('resumableEvaluationFiles', () => {
  it("writes every item's sample, in item order, when an attempt resumed after another wrote some", async () => {
    const first = resumableEvaluationFiles(dir);
    await first.item(sample(2));
    await first.item(sample(0));
    // The first attempt dies here; the retry scores the rest (item 0 again, as a heartbeat may lag the file).
    const retry = resumableEvaluationFiles(dir);
    await retry.item(sample(1));
    await retry.item(sample(0));
    await retry.finish({ items: 3, score: 1 / 3 });
    expect((await readdir(dir)).sort()).toEqual(['metrics.json', 'samples.jsonl']);
    const lines = (await readFile(join(dir, 'samples.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.completion)).toEqual(['answer 0', 'answer 1', 'answer 2']);
    expect(JSON.parse(await readFile(join(dir, 'metrics.json'), 'utf8'))).toEqual({ items: 3, score: 1 / 3 });
  });

  it('writes the metrics and no samples for an environment that evaluates itself', async () => {
    await resumableEvaluationFiles(dir).finish({ items: 0, score: 0.5 });
    expect(await readFile(join(dir, 'samples.jsonl'), 'utf8')).toBe('');
  });
});
