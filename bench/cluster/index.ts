/**
 * Scale on a real cluster (issue 13, point 5): one `clotho serve gsm8k` run of many groups (10,000 by default)
 * feeding `clotho api` and a leasing trainer, on the PostgreSQL-backed cluster and then on the dev server (SQLite
 * file), each with the same scripted model answering at once. Prints, per backend: groups trained and per second,
 * the runs and the largest run (events) of the env-run's and the batcher's histories (continue-as-new keeps each run
 * bounded), and the resident memory of the serve process (its workers) and of the API over the run.
 *
 * Not part of any test suite. Run: node --import tsx bench/cluster/index.ts [--groups 10000] [--backends cluster,dev]
 *   [--batch-groups 32] [--in-flight 32]
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { envRunId } from '../../src/cli/commands/process.js';
import {
  clusterClientEnv,
  clusterConnectionOptions,
  freePort,
  startCluster,
  startDevServer,
  stopCluster,
} from '../../temporal-dev/index.js';
import { killAllTracked, spawnSupervised, type Supervised } from '../../test/support/chaos/supervisor.js';
import { readTrainerLog } from '../../test/support/chaos/trainer-log.js';
import { waitFor } from '../../test/support/cli.js';
import { GSM8K_TEST, gsm8kResponder } from '../../test/support/gsm8k-model.js';
import { startScriptedOpenAI } from '../../test/support/scripted-openai.js';

const { values } = parseArgs({
  options: {
    groups: { type: 'string', default: '10000' },
    backends: { type: 'string', default: 'cluster,dev' },
    'batch-groups': { type: 'string', default: '32' },
    'in-flight': { type: 'string', default: '32' },
  },
});
const GROUPS = Number(values.groups);
const GROUP_SIZE = 2;
const BATCH_GROUPS = Number(values['batch-groups']);
const STEPS = Math.floor(GROUPS / BATCH_GROUPS);
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const trainerScript = join(repoRoot, 'test/support/chaos/trainer.ts');

/** A Temporal server to measure on: its client environment and how to stop it. */
interface Backend {
  name: string;
  env: Record<string, string>;
  connection: Connection;
  namespace: string;
  close(): Promise<void>;
}

async function clusterBackend(dir: string): Promise<Backend> {
  const stateDir = join(dir, 'cluster');
  const cluster = await startCluster({ stateDir, log: (line) => console.log(`cluster: ${line}`) });
  const connection = await Connection.connect(clusterConnectionOptions(cluster));
  return {
    name: 'cluster (PostgreSQL)',
    env: clusterClientEnv(cluster),
    connection,
    namespace: cluster.namespace,
    close: async () => (await connection.close(), void (await stopCluster({ stateDir }))),
  };
}

async function devBackend(dir: string): Promise<Backend> {
  const server = await startDevServer({
    stateDir: join(dir, 'dev'),
    port: 0,
    headless: true,
    dbFilename: join(dir, 'dev', 'temporal.sqlite'),
    startTimeoutMs: 120_000,
  });
  const connection = await Connection.connect({ address: server.address });
  return {
    name: 'dev server (SQLite file)',
    env: { TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: 'default' },
    connection,
    namespace: 'default',
    close: async () => (await connection.close(), await server.stop()),
  };
}

/** Resident memory of a process, in MiB (from /proc). */
function rssMiB(pid: number): number | undefined {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** Every run of a workflow id (continue-as-new makes several) with its history length (visibility has it only for closed runs). */
async function runsOf(client: Client, workflowId: string): Promise<number[]> {
  const lengths: number[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    lengths.push((await client.workflow.getHandle(workflowId, info.runId).describe()).historyLength);
  }
  return lengths;
}

async function measure(backend: Backend, dir: string, modelUrl: string) {
  const client = new Client({ connection: backend.connection, namespace: backend.namespace });
  const clotho = (name: string, args: string[]): Supervised =>
    spawnSupervised({
      name,
      command: process.execPath,
      args: [join(repoRoot, 'bin/clotho.js'), ...args],
      env: { ...backend.env, CLOTHO_HOME: join(dir, `home-${name}`) },
      logFile: join(dir, `${name}.log`),
      cwd: repoRoot,
    });
  const runId = `scale-${Date.now().toString(36)}`;
  const batcherId = `scale-batcher-${randomUUID().slice(0, 8)}`;
  const store = join(dir, 'store');
  const apiPort = await freePort();
  const trainerLog = join(dir, 'trainer.jsonl');
  const api = clotho('api', ['api', '--port', String(apiPort), '--batcher-id', batcherId, '--store', store]);
  await api.waitForLine(/listening on/, 120_000);
  const trainer = spawnSupervised({
    name: 'trainer',
    command: process.execPath,
    cwd: repoRoot,
    logFile: join(dir, 'trainer.log'),
    args: [
      '--import',
      'tsx',
      trainerScript,
      '--api',
      `http://127.0.0.1:${apiPort}`,
      '--log',
      trainerLog,
      '--lease-seconds',
      '60',
      '--batch-size',
      String(BATCH_GROUPS * GROUP_SIZE),
      '--num-steps',
      String(STEPS),
      '--data',
      GSM8K_TEST,
      '--poll-ms',
      '50',
    ],
  });
  await waitFor(() => readTrainerLog(trainerLog).events.some((e) => e.ev === 'registered'), 120_000, 'the trainer to register');
  const serve = clotho('serve', [
    'serve',
    'gsm8k',
    '--batcher-id',
    batcherId,
    '--env.run_id',
    runId,
    '--env.data_path',
    GSM8K_TEST,
    '--env.group_size',
    String(GROUP_SIZE),
    '--env.max_groups_in_flight',
    String(values['in-flight']),
    '--env.max_batches_offpolicy',
    '4',
    '--openai.base_url',
    modelUrl,
    '--store',
    store,
  ]);
  await serve.waitForLine(/registered as/, 120_000);
  const started = Date.now();
  const memory: { t: number; serve?: number; api?: number; trained: number }[] = [];
  const trained = () =>
    readTrainerLog(trainerLog)
      .events.filter((e) => e.ev === 'trained')
      .reduce((n, e) => n + (e.ev === 'trained' ? e.items.length : 0), 0);
  const sampler = setInterval(() => {
    memory.push({ t: (Date.now() - started) / 1000, serve: rssMiB(serve.pid), api: rssMiB(api.pid), trained: trained() });
    if (memory.length % 6 === 0) console.log(`scale: ${JSON.stringify(memory.at(-1))}`);
  }, 10_000);
  const code = await serve.exited;
  clearInterval(sampler);
  const wallS = (Date.now() - started) / 1000;
  if (code !== 0) throw new Error(`clotho serve exited with ${code}:\n${serve.tail(20)}`);
  const groups = trained();
  const envRun = await runsOf(client, envRunId(runId, 'gsm8k'));
  const batcher = await runsOf(client, batcherId);
  await Promise.all([trainer.stop(5_000), api.stop(10_000)]);
  return { groups, wallS, envRun, batcher, memory };
}

async function main(): Promise<void> {
  const model = await startScriptedOpenAI({ responder: gsm8kResponder((_, sample) => sample === 0) });
  const lines: string[] = [];
  try {
    for (const name of String(values.backends).split(',')) {
      const dir = await mkdtemp(join(tmpdir(), `clotho-scale-${name}-`));
      // As root, PostgreSQL runs as the postgres user, which must be able to enter the directory.
      await chmod(dir, 0o755);
      const backend = name === 'cluster' ? await clusterBackend(dir) : await devBackend(dir);
      try {
        console.log(
          `scale: ${backend.name}: ${GROUPS} groups of ${GROUP_SIZE}, batches of ${BATCH_GROUPS} groups, ${values['in-flight']} in flight`,
        );
        const r = await measure(backend, dir, model.baseUrl);
        const mem = (key: 'serve' | 'api') => r.memory.map((m) => m[key]).filter((v): v is number => v !== undefined);
        const quarter = (xs: number[]) =>
          [xs[0], xs[Math.floor(xs.length / 2)], xs.at(-1)].map((v) => (v === undefined ? '-' : v.toFixed(0))).join(' → ');
        lines.push(
          `${backend.name}: ${r.groups} groups trained in ${r.wallS.toFixed(0)} s (${(r.groups / r.wallS).toFixed(1)} groups/s); ` +
            `env-run ${r.envRun.length} runs, largest ${Math.max(...r.envRun)} events; batcher ${r.batcher.length} runs, largest ${Math.max(...r.batcher)} events; ` +
            `RSS MiB (first → middle → last 10 s sample) serve ${quarter(mem('serve'))}, api ${quarter(mem('api'))}`,
        );
        console.log(`scale: ${lines.at(-1)}`);
        console.log(`scale: samples ${JSON.stringify(r.memory)}`);
      } finally {
        killAllTracked();
        await backend.close();
        await rm(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await model.close();
  }
  console.log(`\n${lines.join('\n')}`);
}

await main();
