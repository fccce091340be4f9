import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { decodeRecord } from '../../src/cli/wandb/records.js';
import { readTransactionLog } from '../../src/cli/wandb/transaction-log.js';
import type { envRun } from '../../src/workflows/env-run.js';
import { apiClient, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { spawnClotho, waitFor } from '../support/cli.js';
import { gsm8kResponder, gsm8kCommand } from '../support/gsm8k-model.js';
import { startScriptedOpenAI, type Responder, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';
import { freePort } from '../../temporal-dev/index.js';
import { prometheusSamples } from '../support/prometheus.js';

let api: ApiProcess | undefined;
let model: ScriptedOpenAI | undefined;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-serve-eval-'));
});
afterAll(async () => {
  await api?.stop();
  await model?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Evaluation's greedy requests (temperature 0) take 1.5 s each, item 0 right and item 1 wrong; training answers at once. */
const EVAL_DELAY_MS = 1_500;
function responder(): Responder {
  const train = gsm8kResponder((_item, sample) => sample === 0);
  const evaluate = gsm8kResponder((item) => item === 0, EVAL_DELAY_MS);
  return (body, call) => ((body as { temperature?: number }).temperature === 0 ? evaluate(body, call) : train(body, call));
}

describe('clotho serve --env.steps_per_eval', () => {
  it('evaluates at every second trainer step, launches no training group while it does (STOP_TRAIN), and logs eval/ metrics', async () => {
    const address = inject('temporalAddress');
    const namespace = inject('temporalNamespace');
    api = await startApiProcess({ temporalAddress: address });
    model = await startScriptedOpenAI({ responder: responder() });
    const http = apiClient(api.url);
    await http.post('/register', { ...TRAINER, batch_size: 4, num_steps: 4 });
    expect((await http.get('/batch')).json).toEqual({ batch: null });

    const runId = uniqueId('serve-eval');
    const wandbDir = join(dir, 'wandb-root');
    const port = await freePort();
    const serve = spawnClotho(
      gsm8kCommand('serve', model.baseUrl, {
        'batcher-id': api.batcherId,
        'env.run_id': runId,
        'env.group_size': 2,
        'env.max_batches_offpolicy': 1,
        store: api.store,
        'env.steps_per_eval': 2,
        'env.eval_items': 2,
        'env.max_eval_workers': 1,
        'env.data_dir_to_save_evals': join(dir, 'evals'),
        'env.use_wandb': true,
        'env.min_items_sent_before_logging': 1,
        'metrics-port': String(port),
      }),
      { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, WANDB_MODE: 'offline', WANDB_DIR: wandbDir },
    );
    try {
      // Printed after the registration line, in a write of its own: wait for it rather than read it at registration.
      await waitFor(
        () => serve.stdout().includes('evaluating 2 items every 2 trainer steps (STOP_TRAIN)'),
        90_000,
        'the evaluation schedule',
      );
      expect(serve.stdout()).toContain('registered as gsm8k');
      // The trainer takes batches until serve stops at step 4 (after the evaluation at step 4).
      let done = false;
      const exited = serve.exited.finally(() => (done = true));
      const steps: number[] = [];
      // Prometheus, while serve runs: read once the first evaluation is in the log.
      let scraped: Map<string, number> | undefined;
      await waitFor(
        async () => {
          if (done) return true;
          if (!scraped && serve.stdout().includes('evaluation at step 2')) {
            scraped = prometheusSamples(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
          }
          const { batch } = (await http.get('/batch')).json as { batch: unknown[] | null };
          if (batch) steps.push(steps.length + 1);
          return done;
        },
        180_000,
        'serve to reach the last step',
      );
      expect(await exited).toBe(0);
      expect(steps).toEqual([1, 2, 3, 4]);
      expect(scraped?.get('clotho_evaluations_total{environment="gsm8k",outcome="completed"}')).toBe(1);
      expect(scraped?.get('clotho_eval_metric{environment="gsm8k",metric="percent_correct"}')).toBe(0.5);
      expect(scraped?.get('clotho_eval_metric{environment="gsm8k",metric="items"}')).toBe(2);
      expect(scraped?.get('clotho_eval_step{environment="gsm8k"}')).toBe(2);

      // The run's log: one line per evaluation, at steps 2 and 4 only, with clotho evaluate's metrics.
      const lines = serve
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('evaluation at step'));
      expect(lines.map((l) => l.match(/^evaluation at step (\d+):/)![1])).toEqual(['2', '4']);
      for (const line of lines) {
        for (const part of ['percent_correct 0.500', 'items 2', 'score 0', 'correct 0.500']) expect(line).toContain(part);
      }
      expect(serve.stdout()).toMatch(/delivered \d+ groups; failed 0; evaluations 2 \(skipped 0, failed 0\)/);

      // The evaluations are workflows of their own, one per step; no training group started while one ran.
      const connection = await Connection.connect({ address });
      try {
        const client = new Client({ connection, namespace });
        const describe = (id: string) => client.workflow.getHandle(id).describe();
        const exists = (id: string) =>
          describe(id).then(
            () => true,
            (e: unknown) => (e instanceof WorkflowNotFoundError ? false : Promise.reject(e)),
          );
        for (const step of [1, 3]) expect(await exists(`clotho/${runId}/gsm8k/eval-${step}`)).toBe(false);
        const status = await client.workflow.getHandle<typeof envRun>(`clotho/${runId}/gsm8k`).result();
        expect(status.evaluation?.results.map((r) => r.step)).toEqual([2, 4]);
        const groupStarts = await Promise.all(
          Array.from({ length: status.nextItem }, async (_, i) => (await describe(`clotho/${runId}/gsm8k/item-${i}`)).startTime.getTime()),
        );
        for (const step of [2, 4]) {
          const evaluation = await describe(`clotho/${runId}/gsm8k/eval-${step}`);
          expect(evaluation.status.name).toBe('COMPLETED');
          const [from, to] = [evaluation.startTime.getTime(), evaluation.closeTime!.getTime()];
          // Two greedy requests of 1.5 s one after the other (max_eval_workers 1).
          expect(to - from).toBeGreaterThanOrEqual(2 * EVAL_DELAY_MS);
          expect(groupStarts.filter((t) => t > from && t < to)).toEqual([]);
        }
        // Training went on after the evaluation at step 2: it is what made steps 3 and 4.
        const eval2 = await describe(`clotho/${runId}/gsm8k/eval-2`);
        expect(groupStarts.filter((t) => t >= eval2.closeTime!.getTime()).length).toBeGreaterThanOrEqual(2);
      } finally {
        await connection.close();
      }

      // data_dir_to_save_evals: each evaluation's metrics and one sample per item, under its step.
      expect((await readdir(join(dir, 'evals'))).sort()).toEqual(['step-2', 'step-4']);
      for (const step of ['step-2', 'step-4']) {
        expect((await readdir(join(dir, 'evals', step))).sort()).toEqual(['metrics.json', 'samples.jsonl']);
        expect(JSON.parse(await readFile(join(dir, 'evals', step, 'metrics.json'), 'utf8'))).toMatchObject({ items: 2, score: 0 });
        const saved = (await readFile(join(dir, 'evals', step, 'samples.jsonl'), 'utf8'))
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
        expect(saved.map((s: { itemIndex: number; score: number }) => [s.itemIndex, s.score])).toEqual([
          [0, 1],
          [1, -1],
        ]);
      }

      // W&B: Atropos's eval/ names, prefixed with the registered name as in serve mode.
      const [runName] = await readdir(join(wandbDir, 'wandb'));
      const runDir = join(wandbDir, 'wandb', runName!);
      const [file] = (await readdir(runDir)).filter((f) => f.endsWith('.wandb'));
      const records = readTransactionLog(await readFile(join(runDir, file!))).map(decodeRecord);
      const rows = records
        .filter((r) => r.history)
        .map((r) => Object.fromEntries(r.history!.item.map((i) => [i.key, JSON.parse(i.value_json)])));
      const evalRows = rows.filter((r) => 'gsm8k_0_eval/percent_correct' in r);
      expect(evalRows.length).toBeGreaterThanOrEqual(1);
      for (const r of evalRows) {
        expect(r).toMatchObject({
          'gsm8k_0_eval/percent_correct': 0.5,
          'gsm8k_0_eval/items': 2,
          'gsm8k_0_eval/score': 0,
          'gsm8k_0_eval/correct': 0.5,
        });
        expect(r._step).toBeGreaterThanOrEqual(2);
      }
    } finally {
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
    }
  });
});
