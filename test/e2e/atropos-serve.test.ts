import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { envRunStatusQuery, waitingGroupsQuery } from '../../src/workflows/messages.js';
import { apiClient, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import {
  arithmeticResponder,
  ATROPOS_ENVS,
  atroposPython,
  atroposWorkerPids,
  endsWithin,
  processGroupPids,
  recordHistory,
} from '../support/atropos.js';
import { spawnClotho, waitFor } from '../support/cli.js';
import { startVllmServer } from '../support/native-servers.js';
import { prometheusSamples } from '../support/prometheus.js';
import { useScratch } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';
import { freePort } from '../../temporal-dev/index.js';
import type { AtroposProgress } from '../../src/schema/atropos.js';
import type { atroposEnvRun } from '../../src/workflows/atropos-env-run.js';
import { atroposEnvironmentName } from '../../src/cli/atropos/session.js';

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
      await recordHistory('atropos-env-run-batched-batcher.json', `clotho/${runId}/arithmetic_env`);
    } finally {
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
    }
  }, 300_000);

  it("checkpoints at the trainer's checkpoint_interval, restarts a Python worker killed -9, which restores, evaluates and logs", async () => {
    const address = inject('temporalAddress');
    const own = await startApiProcess({ temporalAddress: address });
    const http = apiClient(own.url);
    // Batches of two groups of four, a checkpoint at every step, six steps.
    await http.post('/register', { ...TRAINER, batch_size: 8, num_steps: 6, save_checkpoint_interval: 1 });
    expect((await http.get('/batch')).json).toEqual({ batch: null });
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder(50) }));
    const runId = uniqueId('atropos-hooks');
    const workflowId = `clotho/${runId}/CheckpointedArithmeticEnv`;
    const serveArgs = (port: number) => [
      'serve',
      '--atropos',
      `${join(ATROPOS_ENVS, 'arithmetic_env.py')}:CheckpointedArithmeticEnv`,
      ...['--batcher-id', own.batcherId, '--store', own.store, '--env.run_id', runId, '--env.tokenizer_name', tokenizer],
      ...['--env.max_batches_offpolicy', '1', '--env.max_num_workers', '2', '--env.steps_per_eval', '2'],
      ...['--env.min_items_sent_before_logging', '1', '--openai.base_url', model.baseUrl, '--metrics-port', String(port)],
    ];
    const questions: string[] = [];
    const takeBatch = async () => {
      const { batch } = (await http.get('/batch')).json as { batch: { messages: { content: string }[][] }[] | null };
      for (const group of batch ?? []) questions.push(String(group.messages[0]![1]!.content));
      return batch !== null;
    };
    const connection = await Connection.connect({ address });
    const handle = new Client({ connection }).workflow.getHandle<typeof atroposEnvRun>(workflowId);
    const status = async () => (await handle.query(envRunStatusQuery)) as unknown as AtroposProgress;
    const port = await freePort();
    const first = spawnClotho(serveArgs(port), env);
    try {
      // Its schedule is printed right after it registers, and may reach the pipe in a chunk of its own.
      await waitFor(() => first.stdout().includes('trainer steps ('), 120_000, 'clotho serve --atropos to register and print its schedule');
      expect(first.stdout()).toContain('registered as');
      expect(first.stdout()).toContain('evaluating every 2 trainer steps (STOP_TRAIN)');
      let taken = 0;
      await waitFor(async () => (taken += Number(await takeBatch())) >= 3, 90_000, 'three batches');
      await waitFor(async () => ((await status()).checkpoint?.step ?? 0) >= 3, 60_000, 'the checkpoint at step 3');
      await waitFor(() => first.stdout().includes('evaluation at step 2: percent_correct 1.000'), 60_000, 'the evaluation at step 2');
      // The environment's wandb_log numbers (Atropos's timing stats among them) and the evaluation, on /metrics.
      const scraped = prometheusSamples(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      const env_ = 'environment="CheckpointedArithmeticEnv"';
      expect(scraped.get(`clotho_env_logged_metric{${env_},metric="train_perf/task_duration_mean"}`)).toBeGreaterThan(0);
      expect(scraped.get(`clotho_env_logged_metric{${env_},metric="train/percent_correct"}`)).toBe(0.25);
      expect(scraped.get(`clotho_eval_metric{${env_},metric="percent_correct"}`)).toBe(1);

      // kill -9 the Python worker's process group (and nothing else): the command starts another, and the run goes on.
      const before = await status();
      const python = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(first.child.pid)], { encoding: 'utf8' })
        .split('\n')
        .find((line) => line.includes('clotho_atropos worker'))!;
      process.kill(-Number(python.trim().split(/\s+/)[0]), 'SIGKILL');
      expect(before.checkpoint!.cursor).toBeGreaterThan(0);

      let done = false;
      const exited = first.exited.finally(() => (done = true));
      await waitFor(
        async () => {
          if (!done) await takeBatch();
          return done;
        },
        180_000,
        'serve to reach the last step',
      );
      expect(await exited).toBe(0);
      expect(first.stderr()).toMatch(/the Atropos worker exited \(SIGKILL\): restart 1 of at most 5 within 10 minutes/);
      const result = await handle.result();
      // The new worker restored the checkpoint, then skipped only the items taken after it.
      expect(result.restored!.from).not.toBeNull();
      expect(result.restored!.from).toBeGreaterThanOrEqual(before.checkpoint!.cursor);
      expect(result.restored!.fastForwarded).toBe(result.restored!.cursor - result.restored!.from!);
      expect(result.restored!.fastForwarded).toBeLessThan(result.restored!.cursor);
      // No item served twice (the first 60 questions of the data set are distinct).
      expect(questions.length).toBe(12);
      expect(new Set(questions).size).toBe(questions.length);
      expect(result.evaluation!.results[0]!.step).toBe(2);
      expect(result.evaluation!.failed).toBe(0);
      expect(first.stdout()).toMatch(/delivered \d+ groups; failed 0; evaluations \d+ \(skipped 0, failed 0\)/);
      await recordHistory('atropos-env-run-batched-restored.json', workflowId);
    } finally {
      await connection.close();
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
      await own.stop();
    }
  }, 400_000);

  /** `clotho serve --atropos <file>` for a trainer of `steps` batches of two groups of two (and `trainer`'s settings), on its own API. */
  async function serveTo(file: string, baseUrl: string, steps: number, trainer: Partial<typeof TRAINER> = {}) {
    const address = inject('temporalAddress');
    const own = await startApiProcess({ temporalAddress: address });
    const http = apiClient(own.url);
    await http.post('/register', { ...TRAINER, batch_size: 4, num_steps: steps, ...trainer });
    expect((await http.get('/batch')).json).toEqual({ batch: null });
    const runId = uniqueId('atropos-serve-envs');
    const stem = atroposEnvironmentName(file);
    const serve = spawnClotho(
      [
        ...['serve', '--atropos', join(ATROPOS_ENVS, file), '--batcher-id', own.batcherId, '--store', own.store],
        ...['--env.run_id', runId, '--env.tokenizer_name', tokenizer, '--env.group_size', '2', '--env.max_num_workers', '2'],
        ...['--openai.base_url', baseUrl, '--openai.tokenizer_name', tokenizer, '--steps.generate.initial_interval', '0.1'],
      ],
      env,
    );
    const connection = await Connection.connect({ address });
    const handle = new Client({ connection }).workflow.getHandle<typeof atroposEnvRun>(`clotho/${runId}/${stem}`);
    const status = async () => (await handle.query(envRunStatusQuery)) as unknown as AtroposProgress;
    const close = async () => {
      if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
      await connection.close();
      await own.stop();
    };
    await waitFor(() => serve.stdout().includes('registered as'), 120_000, `clotho serve --atropos ${file} to register`);
    return { http, serve, status, close, handle };
  }

  it("hands the trainer's max_token_len to the environment, whose send filter drops longer groups as Atropos's does", async () => {
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder() }));
    // Every arithmetic rollout is longer than 8 tokens.
    const served = await serveTo('arithmetic_env.py', model.baseUrl, 1, { max_token_len: 8 });
    try {
      const tooLong = async () => {
        const progress = await served.status().catch((error: unknown) => {
          if (error instanceof WorkflowNotFoundError) return undefined;
          throw error;
        });
        return progress?.dropped['longer than max_token_len 8'] ?? 0;
      };
      await waitFor(async () => (await tooLong()) >= 2, 120_000, "groups dropped by the environment's send filter at max_token_len 8");
      expect((await served.status()).delivered).toBe(0);
    } finally {
      await served.close();
    }
  }, 300_000);

  it('serves an environment that scores in a process pool it forks (its children do not hang on the worker’s stdin)', async () => {
    const forked = await serveTo('forked_pool_env.py', 'http://127.0.0.1:9/v1', 1);
    const workers = atroposWorkerPids(forked.serve.child.pid!);
    try {
      let batch: { scores: number[] }[] | null = null;
      await waitFor(
        async () => (batch = (await forked.http.get('/batch')).json.batch as typeof batch) !== null,
        120_000,
        'a batch of groups scored in a forked pool',
      );
      expect(batch!.map((g) => g.scores)).toEqual([
        [1, -1],
        [1, -1],
      ]);
      expect(await endsWithin(forked.serve, 60_000, 'clotho serve --atropos at the last step')).toBe(0);
    } finally {
      await forked.close();
      // A pool whose children hung outlives its worker: end it with the test.
      for (const pid of workers) if (processGroupPids(pid).length > 0) process.kill(-pid, 'SIGKILL');
    }
  }, 300_000);

  it('serves the multi-step, failing-once and declining test environments as Atropos would, counting what it drops', async () => {
    type Group = {
      tokens: number[][];
      masks: number[][];
      inference_logprobs: number[][] | null;
      scores: number[];
      messages: { role: string }[][];
    };
    const batches = async (http: ReturnType<typeof apiClient>, n: number) => {
      const taken: Group[][] = [];
      await waitFor(
        async () => {
          const { batch } = (await http.get('/batch')).json as { batch: Group[] | null };
          if (batch) taken.push(batch);
          return taken.length === n;
        },
        120_000,
        `${n} batches`,
      );
      return taken.flat();
    };

    // Two model calls per rollout through ManagedServer, on a vLLM-style /generate: one sequence of exact tokens.
    const vllm = scratch.closeAfter(await startVllmServer());
    const multistep = await serveTo('multistep_env.py', `${vllm.url}/v1`, 1);
    try {
      const groups = await batches(multistep.http, 1);
      expect(groups).toHaveLength(2);
      for (const group of groups) {
        expect(group.messages.map((m) => m.map((turn) => turn.role))).toEqual([
          ['user', 'assistant', 'user', 'assistant'],
          ['user', 'assistant', 'user', 'assistant'],
        ]);
        group.tokens.forEach((tokens, i) => {
          expect(group.masks[i]).toHaveLength(tokens.length);
          expect(group.inference_logprobs![i]).toHaveLength(tokens.length);
        });
      }
      expect(await multistep.serve.exited).toBe(0);
      expect(vllm.requests.filter((r) => r.path === '/generate').length).toBeGreaterThanOrEqual(8);
    } finally {
      await multistep.close();
    }

    // collect_trajectories raises at its first attempt at every item: each group delivered was retried, none failed.
    const flaky = await serveTo('flaky_env.py', 'http://127.0.0.1:9/v1', 1);
    try {
      const groups = await batches(flaky.http, 1);
      expect(groups.map((g) => g.scores)).toEqual([
        [1, 0],
        [1, 0],
      ]);
      expect(await flaky.serve.exited).toBe(0);
      expect(flaky.serve.stdout()).toMatch(/delivered \d+ groups; failed 0/);
    } finally {
      await flaky.close();
    }

    // Odd items declined (None, put back), even ones of equal scores, which Atropos's serve never sends: nothing
    // reaches the trainer, and every drop is counted by its reason.
    const declining = await serveTo('declining_env.py', 'http://127.0.0.1:9/v1', 1);
    try {
      await waitFor(
        async () => {
          // The env-run starts once serve has registered with the batcher: until then there is nothing to ask.
          const progress = await declining.status().catch((error: unknown) => {
            if (error instanceof WorkflowNotFoundError) return undefined;
            throw error;
          });
          const dropped = progress?.dropped ?? {};
          return (dropped.declined ?? 0) >= 2 && Object.keys(dropped).length >= 2;
        },
        120_000,
        'drops of both kinds',
      );
      const progress = await declining.status();
      expect(progress.delivered).toBe(0);
      expect(progress.failed).toBe(0);
      expect((await declining.http.get('/batch')).json).toEqual({ batch: null });
    } finally {
      await declining.close();
    }
  }, 600_000);

  it("asks a streaming environment again after get_next_item's None, on durable timers 1 s, 2 s, 4 s, and feeds the trainer", async () => {
    // StreamingEnv has nothing for its first three calls, then an item at every call.
    const streaming = await serveTo('edge_envs.py:StreamingEnv', 'http://127.0.0.1:9/v1', 1);
    try {
      let batch: { scores: number[] }[] | null = null;
      await waitFor(
        async () => {
          if (streaming.serve.child.exitCode !== null) {
            throw new Error(
              `serve exited (${streaming.serve.child.exitCode}) before the trainer had a batch:\n${streaming.serve.stdout()}`,
            );
          }
          batch = (await streaming.http.get('/batch')).json.batch as { scores: number[] }[] | null;
          return batch !== null;
        },
        120_000,
        'a batch',
      );
      expect(batch!.map((g) => g.scores)).toEqual([
        [1, 0],
        [1, 0],
      ]);
      expect(await streaming.serve.exited).toBe(0);
      const timers = ((await streaming.handle.fetchHistory()).events ?? []).flatMap((e) =>
        e.timerStartedEventAttributes ? [Number(e.timerStartedEventAttributes.startToFireTimeout!.seconds)] : [],
      );
      expect(timers).toEqual([1, 2, 4]);
      await recordHistory('atropos-env-run-loop-waiting.json', streaming.handle.workflowId);
    } finally {
      await streaming.close();
    }
  }, 300_000);
});
