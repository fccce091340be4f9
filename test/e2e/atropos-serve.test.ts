import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { envRunStatusQuery, waitingGroupsQuery } from '../../src/workflows/messages.js';
import { apiClient, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { arithmeticResponder, ATROPOS_ENVS, atroposPython, recordHistory } from '../support/atropos.js';
import { spawnClotho, waitFor } from '../support/cli.js';
import { useScratch } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

const scratch = useScratch('clotho-atropos-serve-');
let api: ApiProcess | undefined;
let env: Record<string, string>;
let tokenizer: string;

beforeAll(async () => {
  const python = await atroposPython(scratch.path());
  tokenizer = python.tokenizer;
  env = { TEMPORAL_ADDRESS: inject('temporalAddress'), ...python.env };
}, 300_000);
afterAll(() => api?.stop());

describe('clotho serve --atropos', () => {
  it("feeds the batcher an Atropos environment's groups under max_batches_offpolicy, and stops at the trainer's last step", async () => {
    const address = inject('temporalAddress');
    api = await startApiProcess({ temporalAddress: address });
    const http = apiClient(api.url);
    // Batches of two groups of four; at most one batch may wait (max_batches_offpolicy 1): two groups.
    await http.post('/register', { ...TRAINER, batch_size: 8, num_steps: 2 });
    // The trainer has started (Atropos's rule for registering environments).
    expect((await http.get('/batch')).json).toEqual({ batch: null });
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder() }));
    const runId = uniqueId('atropos-serve');
    const serve = spawnClotho(
      [
        'serve',
        '--atropos',
        join(ATROPOS_ENVS, 'arithmetic_env.py'),
        '--batcher-id',
        api.batcherId,
        '--store',
        api.store,
        '--env.run_id',
        runId,
        '--env.tokenizer_name',
        tokenizer,
        '--env.max_batches_offpolicy',
        '1',
        '--env.max_num_workers',
        '4',
        '--openai.base_url',
        model.baseUrl,
      ],
      env,
    );
    try {
      await waitFor(() => serve.stdout().includes('registered as arithmetic'), 120_000, 'clotho serve --atropos to register');
      const envId = Number(serve.stdout().match(/env_id (\d+)/)![1]);
      const queued = async () => (await http.getWithBody('/status-env', { env_id: envId })).json.self_queue_size as number;
      await waitFor(async () => (await queued()) >= 2, 60_000, 'the room of one batch to fill');
      const connection = await Connection.connect({ address });
      const client = new Client({ connection });
      const status = await client.workflow.getHandle(`clotho/${runId}/arithmetic_env`).query(envRunStatusQuery);
      // Stamped with the policy that generated them: the trainer's step when they started (0: it has trained none).
      const waiting = await client.workflow.getHandle(api.batcherId).query(waitingGroupsQuery, { offset: 0, limit: 10 });
      await connection.close();
      expect(waiting.groups.map((g) => [g.envId, g.size, g.policyVersion])).toEqual([
        [envId, 4, 0],
        [envId, 4, 0],
      ]);
      // Room for two groups: none started beyond them while nobody trains.
      expect(status.nextItem).toBe(2);
      expect(await queued()).toBe(2);

      const batches: { tokens: number[][]; scores: number[]; messages: unknown; env_id: number }[][] = [];
      await waitFor(
        async () => {
          const { batch } = (await http.get('/batch')).json;
          if (batch) batches.push(batch);
          return batches.length === 2;
        },
        90_000,
        'two batches',
      );
      for (const batch of batches) {
        expect(batch).toHaveLength(2);
        for (const group of batch) {
          expect(group.env_id).toBe(envId);
          expect(group.scores).toEqual([1, -1, -1, -1]);
          expect(group.messages).not.toBeNull();
        }
      }
      expect(await serve.exited).toBe(0);
      expect(serve.stdout()).toMatch(/delivered \d+ groups; failed 0/);
      await recordHistory('atropos-env-run-batcher.json', `clotho/${runId}/arithmetic_env`);
    } finally {
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
    }
  }, 300_000);
});
