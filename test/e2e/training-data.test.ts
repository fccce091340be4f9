import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadTokenizer, type Tokenizer } from '../../src/inference/tokenizer.js';
import { batcherViewQuery } from '../../src/workflows/messages.js';
import { apiClient, startApiProcess, type ApiProcess } from '../support/api-process.js';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import { runClotho, spawnClotho, waitFor } from '../support/cli.js';
import { gsm8kResponder, gsm8kCommand } from '../support/gsm8k-model.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';
import { testConnection, uniqueId } from '../support/temporal.js';

let api: ApiProcess;
let http: ReturnType<typeof apiClient>;
let dir: string;
let qwen: Tokenizer;

beforeAll(async () => {
  [api, dir, qwen] = await Promise.all([
    startApiProcess({ temporalAddress: inject('temporalAddress') }),
    mkdtemp(join(tmpdir(), 'clotho-training-data-e2e-')),
    loadTokenizer('qwen3'),
  ]);
  http = apiClient(api.url);
});
afterAll(async () => {
  await api?.stop();
  await rm(dir, { recursive: true, force: true });
});

const chat = (question: string, answer: string) => [
  { role: 'user', content: question },
  { role: 'assistant', content: answer },
];

/** A group as an environment posts it: tokens of question and answer, the answers' messages, no env id. */
function group(question: string, answers: string[], scores: number[]) {
  const tokens = answers.map((a) => qwen.encode(`${question} A: ${a}`, { addSpecialTokens: false }));
  return { tokens, masks: tokens.map((t) => t.map(() => -100)), scores, messages: answers.map((a) => chat(question, a)) };
}
const linesOf = async (path: string) => (await readFile(path, 'utf8')).split('\n').filter(Boolean);

describe('clotho sft-gen and dpo-gen as trainers of a real `clotho api` process', () => {
  it('sft-gen takes groups posted before it registered, writes the whole last batch, and acks it', async () => {
    expect((await http.post('/scored_data', group('2+2?', ['4', '5'], [1, -1]))).json).toEqual({ status: 'received' });
    expect((await http.post('/scored_data', group('3+3?', ['6', '7'], [0.5, 0.5]))).json).toEqual({ status: 'received' });
    const path = join(dir, 'sft.jsonl');
    // Batches of 2 × 2 sequences: both groups in one; 2 records asked for, the batch gives 3.
    const { code, stdout, stderr } = await runClotho([
      'sft-gen',
      path,
      '--api-url',
      api.url,
      '--group-size',
      '2',
      '--tasks-per-step',
      '2',
      '--num-seqs-to-save',
      '2',
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain(`registered with ${api.url} as its trainer: batches of 4 sequences`);
    expect(stdout).toContain(`wrote 3 sequences from 2 groups to ${path}`);
    expect(await linesOf(path)).toEqual([
      JSON.stringify({ messages: chat('2+2?', '4'), score: 1 }),
      JSON.stringify({ messages: chat('3+3?', '6'), score: 0.5 }),
      JSON.stringify({ messages: chat('3+3?', '7'), score: 0.5 }),
    ]);
    // Taken under a lease and acked once written: the batcher holds nothing more for a trainer.
    expect((await http.get('/status')).json).toMatchObject({ queue_size: 0 });
    const view = await (await testConnection()).client.workflow.getHandle(api.batcherId).query(batcherViewQuery);
    expect(view.metrics.counters).toMatchObject({ batchesServed: 1, batchesAcked: 1 });
    expect((await http.get('/batch')).json).toEqual({ batch: null });
  });

  it('dpo-gen waits for groups, decodes tokens with --tokenizer, and pairs them', async () => {
    const path = join(dir, 'dpo.jsonl');
    const run = spawnClotho(['dpo-gen', path, '--api-url', api.url, '--tokenizer', 'qwen3', '--num-seqs-to-save', '1', '--seed', '1']);
    // The trainer registered first stays: this one's batch size (2 × 8) does not replace it.
    await waitFor(() => run.stdout().includes('registered with') || run.child.exitCode !== null, 60_000, 'dpo-gen to register');
    expect(run.stdout()).toContain(
      `registered with ${api.url} as its trainer: batches of 4 sequences (set by the trainer that registered first; this one asked for 16)`,
    );
    expect((await http.post('/scored_data', group('5+5?', ['10', '11', '9', '12'], [1, 0, -1, 0.9]))).json).toEqual({ status: 'received' });
    expect(await run.exited).toBe(0);
    // Chosen: 10 (1) and 12 (0.9); rejected candidates, lowest first: 9 (-1), 11 (0), 12 (0.9).
    // 10 takes 9 or 11 at random (the seed picks 11), 12 the one left below 0.4.
    expect(await linesOf(path)).toEqual([
      '{"prefix":"5+5? A: ","pos":"10","score":1,"neg":"11"}',
      '{"prefix":"5+5? A: ","pos":"12","score":0.9,"neg":"9"}',
    ]);
    expect(run.stdout()).toContain(`wrote 2 pairs from 1 group to ${path}`);
  });

  it("reads a `clotho process` run's JSONL and its groups in the store, offline", async () => {
    // Sample 0 of each group boxes the gold answer (+1), the two others a wrong one (-1).
    const model = await startScriptedOpenAI({ responder: gsm8kResponder((_, sample) => sample === 0) });
    const runId = uniqueId('gsm8k');
    const [out, store] = [join(dir, 'gsm8k.jsonl'), join(dir, 'store')];
    try {
      const env = { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') };
      const processed = await runClotho(
        gsm8kCommand('process', model.baseUrl, {
          'env.total_steps': 2,
          'env.group_size': 3,
          'env.run_id': runId,
          'env.data_path_to_save_groups': out,
          store,
        }),
        env,
      );
      expect(processed.code).toBe(0);
    } finally {
      await model.close();
    }
    const groups = (await linesOf(out)).map((line) => JSON.parse(line) as ScoredDataGroup);
    expect(groups.map((g) => g.scores)).toEqual([
      [1, -1, -1],
      [1, -1, -1],
    ]);

    const sft = join(dir, 'gsm8k-sft.jsonl');
    expect((await runClotho(['sft-gen', sft, '--from', out])).code).toBe(0);
    expect(await linesOf(sft)).toEqual(groups.map((g) => JSON.stringify({ messages: g.messages![0], score: 1 })));

    const dpo = join(dir, 'gsm8k-dpo.jsonl');
    const paired = await runClotho(['dpo-gen', dpo, '--run', runId, '--store', store]);
    expect(paired.stdout).toContain(`wrote 2 pairs from 2 groups to ${dpo}`);
    const pairs = (await linesOf(dpo)).map((line) => JSON.parse(line) as { pos: unknown; score: number; neg: unknown });
    // The store holds the run's groups by item; the JSONL has them in the order they finished.
    const byQuestion = (messages: unknown) =>
      JSON.stringify((messages as { role: string; content: string }[]).find((m) => m.role === 'user'));
    for (const pair of pairs) {
      const g = groups.find((candidate) => byQuestion(candidate.messages![0]) === byQuestion(pair.pos))!;
      expect(pair).toEqual({ pos: g.messages![0], score: 1, neg: expect.anything() });
      expect([g.messages![1], g.messages![2]]).toContainEqual(pair.neg);
      expect(Object.keys(pair)).toEqual(['pos', 'score', 'neg']);
    }
  });
});
