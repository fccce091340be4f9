import { afterAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { envRunStatusQuery } from '../../src/workflows/messages.js';
import { apiClient, group, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { spawnClotho, waitFor } from '../support/cli.js';
import { gsm8kResponder, gsm8kCommand } from '../support/gsm8k-model.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

let api: ApiProcess | undefined;
let model: ScriptedOpenAI | undefined;
afterAll(async () => {
  await api?.stop();
  await model?.close();
});

describe('clotho serve', () => {
  // Its own waits (serve registering, filling its share, three batches) add up to more than the suite's 120 s default.
  it('feeds the trainer beside an HTTP environment, holds back at max_batches_offpolicy, and stops at the last step', async () => {
    const address = inject('temporalAddress');
    api = await startApiProcess({ temporalAddress: address });
    // Every sample answers item 0 right: equal scores, a group dropped before delivery and counted by the batcher.
    model = await startScriptedOpenAI({ responder: gsm8kResponder((item, sample) => item === 0 || sample === 0) });
    const http = apiClient(api.url);
    await http.post('/register', { ...TRAINER, batch_size: 4, num_steps: 3 });
    expect((await http.get('/batch')).json).toEqual({ batch: null });

    // An Atropos environment posting over HTTP at the same time, registered first: the batcher shares the room by weight.
    const registered = (await http.post('/register-env', { max_token_length: 2048, desired_name: 'http-env', weight: 1, group_size: 2 }))
      .json;
    const runId = uniqueId('serve');
    const serve = spawnClotho(
      gsm8kCommand('serve', model.baseUrl, {
        'batcher-id': api.batcherId,
        'env.run_id': runId,
        'env.group_size': 2,
        'env.max_batches_offpolicy': 2,
        store: api.store,
      }),
      { TEMPORAL_ADDRESS: address },
    );
    try {
      await waitFor(() => serve.stdout().includes('registered as gsm8k'), 90_000, 'clotho serve to register');
      const serveEnvId = Number(serve.stdout().match(/env_id (\d+)/)![1]);
      expect(serveEnvId).not.toBe(registered.env_id);

      // Backpressure: 2 batches × 4 sequences / groups of 2 = 4 groups may wait, of which this env's share (weight 1 ×
      // 1024 tokens against the HTTP env's 1 × 2048: 1/3, Atropos's env_weight) is 2; then it launches nothing more.
      const queued = async () => (await http.getWithBody('/status-env', { env_id: serveEnvId })).json.self_queue_size as number;
      await waitFor(async () => (await queued()) >= 2, 60_000, 'serve to fill its share of the queue');
      const connection = await Connection.connect({ address });
      const status = await new Client({ connection }).workflow.getHandle(`clotho/${runId}/gsm8k`).query(envRunStatusQuery);
      await connection.close();
      expect(status.dropped).toEqual({ scores_all_equal: 1 });
      expect(status.nextItem).toBe(3);
      expect(await queued()).toBe(2);

      await http.post('/scored_data_list', [group(901, 2, registered.env_id), group(902, 2, registered.env_id)]);
      const batches: { tokens: number[][]; messages: unknown; env_id: number }[][] = [];
      await waitFor(
        async () => {
          const { batch } = (await http.get('/batch')).json;
          if (batch) batches.push(batch);
          return batches.length === 3;
        },
        90_000,
        'three batches',
      );
      for (const batch of batches) expect(batch.reduce((sum, g) => sum + g.tokens.length, 0)).toBe(4);
      const all = batches.flat();
      expect(all.filter((g) => g.env_id === registered.env_id)).toHaveLength(2);
      const fromServe = all.filter((g) => g.env_id === serveEnvId);
      expect(fromServe.length).toBe(4);
      for (const g of fromServe) expect(g.messages).not.toBeNull();

      const metrics = (await http.get('/metrics')).text;
      expect(metrics).toContain('clotho_env_groups_dropped_total{env="gsm8k_0",reason="scores_all_equal"} 1');

      // The trainer reached num_steps: serve stops launching, finishes what is in flight, and exits.
      expect(await serve.exited).toBe(0);
      expect(serve.stdout()).toMatch(/delivered \d+ groups; failed 0/);
    } finally {
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
    }
  }, 300_000);
});
