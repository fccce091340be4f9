import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClotho } from '../support/cli.js';
import { GSM8K_TEST, gsm8kResponder } from '../support/gsm8k-model.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';

let model: ScriptedOpenAI;
beforeAll(async () => {
  // Right on even items, wrong on odd ones.
  model = await startScriptedOpenAI({ responder: gsm8kResponder((item) => item % 2 === 0) });
});
afterAll(() => model.close());

describe('clotho evaluate', () => {
  it('scores one greedy completion per item and writes Atropos\'s evaluation files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-eval-'));
    const { code, stdout, stderr } = await runClotho([
      'evaluate', 'gsm8k', '--env.data_path', GSM8K_TEST, '--items', '10', '--openai.base_url', model.baseUrl, '--env.data_dir_to_save_evals', dir,
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const metrics = JSON.parse(await readFile(join(dir, 'metrics.json'), 'utf8'));
    expect(metrics).toEqual({ items: 10, score: 0, correct: 0.5, answered: 1 });
    expect(stdout).toContain('"correct": 0.5');
    const samples = (await readFile(join(dir, 'samples.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    expect(samples.map((s) => s.score)).toEqual([1, -1, 1, -1, 1, -1, 1, -1, 1, -1]);
    expect(await readFile(join(dir, 'evaluate_config.yaml'), 'utf8')).toContain('data_path:');
    const bodies = model.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as { temperature: number; n: number });
    expect(bodies).toHaveLength(10);
    for (const body of bodies) expect(body).toMatchObject({ temperature: 0, n: 1 });
  });
});
