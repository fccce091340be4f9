import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envRunId } from '../../src/cli/commands/process.js';
import type { EnvRunResult } from '../../src/schema/rollout.js';
import { clusterClientEnv, clusterConnectionOptions, freePort } from '../../temporal-dev/index.js';
import { account } from '../support/chaos/accounting.js';
import { startMonitor, type Monitor } from '../support/chaos/monitor.js';
import { killAllTracked, spawnSupervised, type Supervised } from '../support/chaos/supervisor.js';
import { readTrainerLog } from '../support/chaos/trainer-log.js';
import { waitFor } from '../support/cli.js';
import { GSM8K_TEST, gsm8kResponder } from '../support/gsm8k-model.js';
import { ensureS3ServerBinary, startS3Server, type S3Server } from '../support/s3-server.js';
import { startScriptedOpenAI, type Responder, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { clothoOnHost, startTestCluster, type TestCluster } from './cluster.js';
import { workerIdentities } from './identities.js';

/**
 * Issue 13, point 3: one training run on a real cluster (the Temporal server on PostgreSQL, SQL visibility), spread
 * over processes as over hosts: `clotho api` (the batcher's worker), `clotho serve gsm8k` (the env-run, registered
 * with the API) and two `clotho worker` processes for the same run, each with a CLOTHO_HOME of its own, all sharing
 * the S3 store (a real S3 server on loopback, found through the AWS variables as on real hosts); a trainer leases
 * and acks batches. One worker is killed -9 while groups are in flight and started again, as a host's supervisor
 * would. Every group must still reach the trainer exactly once (or be dropped or failed with its reason), counted as
 * the chaos test counts them.
 */

const GROUP_SIZE = 2;
const STEPS = 40;
/** Groups the trainer has trained when the worker is killed: the run is under way, most of it still to come. */
const KILL_AFTER = 8;
/**
 * Time each step trains: paces the run (about 30 s in all) as a trainer does, so that the killed worker, started
 * again (some seconds on a loaded machine), finds most of the run still to do.
 */
const TRAIN_MS = 700;

/** Some samples right, some wrong (scores differ); every tenth item all right, so a few groups are dropped (equal scores). */
const correct = (item: number, sample: number) => item % 10 === 9 || sample === 0;
const trainerScript = fileURLToPath(new URL('../support/chaos/trainer.ts', import.meta.url));

let test: TestCluster;
/** The model of `clotho serve` and the surviving worker. */
let model: ScriptedOpenAI;
/** The killed worker's own model (each host has its inference server), so the test sees its calls in flight. */
let victimModel: ScriptedOpenAI;
let victimCallsInFlight = 0;
let connection: Connection;
let s3: S3Server;
let passed = false;

/** The scripted GSM8K model with latency, so that several groups are in flight on every worker at any time. */
function slowModel(count?: (delta: number) => void): Responder {
  const scripted = gsm8kResponder(correct);
  return async (body, call) => {
    count?.(1);
    try {
      await new Promise((resolve) => setTimeout(resolve, 400));
      return await scripted(body, call);
    } finally {
      count?.(-1);
    }
  };
}

beforeAll(async () => {
  // The S3 server is part of what is tested here: without it the suite fails rather than skips.
  const binary = await ensureS3ServerBinary();
  if (binary.status !== 'ready') throw new Error(`the cluster suite needs the S3 test server: ${binary.message}`);
  s3 = await startS3Server(binary.path);
  await s3.createBucket('clotho');
  test = await startTestCluster();
  model = await startScriptedOpenAI({ responder: slowModel() });
  victimModel = await startScriptedOpenAI({ responder: slowModel((delta) => (victimCallsInFlight += delta)) });
  connection = await Connection.connect(clusterConnectionOptions(test.cluster));
});

afterAll(async () => {
  killAllTracked();
  await model?.close();
  await victimModel?.close();
  await connection?.close();
  await s3?.close();
  if (!passed && test) console.log(`cluster: test failed; logs and the cluster's files kept in ${test.dir}`);
  await test?.stop(!passed);
});

describe('a training run on a PostgreSQL-backed Temporal cluster', () => {
  it('survives kill -9 of one of two workers on separate hosts: every group reaches the trainer exactly once', async () => {
    const { dir, cluster } = test;
    const env = { ...clusterClientEnv(cluster), ...s3.env };
    const client = new Client({ connection, namespace: cluster.namespace });
    const runId = `cluster-${Date.now().toString(36)}`;
    const batcherId = `cluster-batcher-${randomUUID().slice(0, 8)}`;
    const store = `s3://clotho/${runId}-store`;
    const apiPort = await freePort();
    const trainerLog = join(dir, 'trainer-events.jsonl');

    const api = clothoOnHost(dir, 'api', env, ['api', '--port', String(apiPort), '--batcher-id', batcherId, '--store', store]);
    await api.waitForLine(/listening on/, 120_000);
    const trainer = spawnSupervised({
      name: 'trainer',
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        trainerScript,
        '--api',
        `http://127.0.0.1:${apiPort}`,
        '--log',
        trainerLog,
        '--lease-seconds',
        '5',
        '--batch-size',
        String(GROUP_SIZE),
        '--num-steps',
        String(STEPS),
        '--data',
        GSM8K_TEST,
        '--train-ms',
        String(TRAIN_MS),
      ],
      logFile: join(dir, 'trainer.log'),
    });
    await waitFor(() => readTrainerLog(trainerLog).events.some((e) => e.ev === 'registered'), 120_000, 'the trainer to register');

    const run = (baseUrl: string) => [
      '--env.run_id',
      runId,
      '--env.data_path',
      GSM8K_TEST,
      '--env.group_size',
      String(GROUP_SIZE),
      '--openai.base_url',
      baseUrl,
      '--store',
      store,
    ];
    // The workers first, polling the run's queues before its env-run exists, so that all three processes share its
    // work from the first group on.
    const victim = clothoOnHost(dir, 'worker-a', env, ['worker', 'gsm8k', ...run(victimModel.baseUrl)]);
    const survivor = clothoOnHost(dir, 'worker-b', env, ['worker', 'gsm8k', ...run(model.baseUrl)]);
    await Promise.all([victim, survivor].map((w) => w.waitForLine(/workers of run .* polling/, 120_000)));
    const serve = clothoOnHost(dir, 'serve', env, [
      'serve',
      'gsm8k',
      '--batcher-id',
      batcherId,
      '--env.max_batches_offpolicy',
      '4',
      ...run(model.baseUrl),
    ]);
    await serve.waitForLine(/registered as .*\(env_id \d+\)/, 120_000);
    const envId = Number(/\(env_id (\d+)\)/.exec(serve.lines.find((l) => /\(env_id \d+\)/.test(l.text))!.text)![1]);

    const monitor: Monitor = startMonitor({ client: () => client, batcherId, trainerLog });
    try {
      const trained = () => monitor.trainerEvents().filter((e) => e.ev === 'trained').length;
      // Mid-run, and while the victim has a model call in flight: the kill takes work in progress with it.
      await waitFor(
        () => trained() >= KILL_AFTER && victimCallsInFlight > 0,
        180_000,
        `${KILL_AFTER} trained groups and a call in flight on ${victim.name}`,
      );
      const killedAt = Date.now();
      await victim.kill();
      const victimCalls = victimModel.calls;
      console.log(
        `cluster: killed ${victim.name} (pid ${victim.pid}) -9 after ${trained()} trained groups, ${victimCalls} model calls, ${victimCallsInFlight} in flight`,
      );
      // The host comes back: the same command, state directory and model, a new process.
      const restarted = clothoOnHost(dir, 'worker-a-restarted', env, ['worker', 'gsm8k', ...run(victimModel.baseUrl)]);
      await restarted.waitForLine(/workers of run .* polling/, 120_000);
      const restartedAt = Date.now();

      const handle = client.workflow.getHandle(envRunId(runId, 'gsm8k'));
      const result = (await Promise.race([
        handle.result(),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('the env-run did not complete within 300 s')), 300_000).unref(),
        ),
      ])) as EnvRunResult;
      const completedAt = Date.now();
      await waitFor(
        () => {
          const latest = monitor.latest();
          return (
            latest !== undefined &&
            latest.at > completedAt &&
            latest.view.metrics.waitingGroups === 0 &&
            latest.view.metrics.leasedBatches === 0
          );
        },
        60_000,
        'the trainer to take every batch the batcher holds',
      );
      expect(await serve.exited).toBe(0);

      const accounting = await account({
        client,
        runId,
        envId,
        result,
        view: monitor.latest()?.view,
        trainer: readTrainerLog(trainerLog).events,
      });
      console.log(`cluster: ${JSON.stringify({ ...accounting, lostItems: undefined })}`);
      expect(accounting.lost, `groups lost: items ${accounting.lostItems.join(', ')}`).toBe(0);
      expect(accounting.duplicates, 'groups trained in two different batches').toEqual([]);
      expect(accounting.mismatches).toEqual([]);
      expect(accounting.failed).toBe(0);
      expect(accounting.delivered).toBeGreaterThanOrEqual(STEPS);
      expect(accounting.started).toBe(accounting.delivered + (accounting.dropped.scores_all_equal ?? 0));

      // The victim did part of the run; what it had in flight was retried elsewhere; the survivor went on after the
      // kill. The histories say who did what.
      expect(victimCalls, `${victim.name} called its model before the kill`).toBeGreaterThan(1);
      const seen = await workerIdentities(client, runId, accounting.started);
      const of = (w: Supervised) => seen.filter((s) => s.identity.startsWith(`${w.pid}@`));
      expect(seen.filter((s) => s.attempt > 1 && s.at > killedAt).length, 'activities retried after the kill').toBeGreaterThan(0);
      expect(of(survivor).filter((s) => s.at > killedAt).length, `${survivor.name} took tasks after the kill`).toBeGreaterThan(0);
      expect(of(victim).filter((s) => s.at > killedAt + 1_000)).toEqual([]);
      expect(victimModel.calls, `${restarted.name} called its model`).toBeGreaterThan(victimCalls);
      expect(of(restarted).filter((s) => s.at >= restartedAt).length, `${restarted.name} took tasks`).toBeGreaterThan(0);
      console.log(
        `cluster: tasks taken: ${victim.name} ${of(victim).length}, ${restarted.name} ${of(restarted).length}, ${survivor.name} ${of(survivor).length}, serve ${of(serve).length}`,
      );
      // Every process wrote its trajectories to the bucket, none to a local directory.
      const stored = new Set<string>();
      for await (const entry of s3.store(store).list(runId)) stored.add(entry.key.split('/').slice(0, 3).join('/'));
      expect(stored.size).toBeGreaterThanOrEqual(accounting.delivered);
      expect(api.alive() && survivor.alive() && restarted.alive() && trainer.alive()).toBe(true);
      passed = true;
    } finally {
      await monitor.stop();
    }
  });
});
