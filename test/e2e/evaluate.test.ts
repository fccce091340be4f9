import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClotho } from '../support/cli.js';
import { temporalEnv } from '../support/runs.js';
import { gsm8kResponder, gsm8kCommand } from '../support/gsm8k-model.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';

// Right on even items, wrong on odd ones: from a vLLM-like server, and from one that answers with messages only
// (no token ids, no logprobs: OpenAI's API and most hosted ones), which an evaluation needs no more than.
const SERVERS = { vllm: {}, 'messages-only': { tokenIds: false, logprobs: false } } as const;
const models: Partial<Record<keyof typeof SERVERS, ScriptedOpenAI>> = {};
beforeAll(async () => {
  for (const [kind, options] of Object.entries(SERVERS)) {
    models[kind as keyof typeof SERVERS] = await startScriptedOpenAI({ responder: gsm8kResponder((item) => item % 2 === 0), ...options });
  }
});
afterAll(() => Promise.all(Object.values(models).map((m) => m.close())));

describe('clotho evaluate', () => {
  it.each(Object.keys(SERVERS) as (keyof typeof SERVERS)[])(
    "scores one greedy completion per item and writes Atropos's evaluation files (%s server)",
    async (kind) => {
      const model = models[kind]!;
      const dir = await mkdtemp(join(tmpdir(), 'clotho-eval-'));
      const { code, stdout, stderr } = await runClotho(
        gsm8kCommand('evaluate', model.baseUrl, { items: 10, 'env.data_dir_to_save_evals': dir }),
      );
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const metrics = JSON.parse(await readFile(join(dir, 'metrics.json'), 'utf8'));
      expect(metrics).toEqual({ items: 10, score: 0, correct: 0.5, answered: 1 });
      expect(stdout).toContain('"correct": 0.5');
      const samples = (await readFile(join(dir, 'samples.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(samples.map((s) => s.score)).toEqual([1, -1, 1, -1, 1, -1, 1, -1, 1, -1]);
      expect(await readFile(join(dir, 'evaluate_config.yaml'), 'utf8')).toContain('data_path:');
      const bodies = model.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as Record<string, unknown>);
      expect(bodies).toHaveLength(10);
      for (const body of bodies) {
        expect(body).toMatchObject({ temperature: 0, n: 1 });
        // Nothing a hosted API refuses: vLLM's return_token_ids, or logprobs (which OpenAI's reasoning models refuse).
        expect(body).not.toHaveProperty('return_token_ids');
        expect(body).not.toHaveProperty('logprobs');
      }
    },
  );
});

describe('clotho process against a server that answers with messages only', () => {
  it('fails each group saying what the server lacks and which server types give it, since its groups are for training', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-plain-process-'));
    const { code, stdout, stderr } = await runClotho(
      gsm8kCommand('process', models['messages-only']!.baseUrl, {
        'env.total_steps': 2,
        'env.group_size': 2,
        store: join(dir, 'store'),
        'env.data_path_to_save_groups': join(dir, 'out.jsonl'),
      }),
      temporalEnv(),
    );
    expect(code).toBe(1);
    expect(stdout).toContain('failed 2');
    for (const item of [0, 1]) {
      expect(stderr).toContain(
        `item ${item} failed: the inference server returned no logprobs, so the trajectory cannot carry ` +
          'inference_logprobs; use a server that returns them (--openai.server_type vllm, sglang or llama); clotho evaluate and clotho process --env.messages_only need none',
      );
    }
  });
});
