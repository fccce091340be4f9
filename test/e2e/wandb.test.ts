import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { decodeRecord, type WandbRecord } from '../../src/cli/wandb/records.js';
import { readTransactionLog } from '../../src/cli/wandb/transaction-log.js';
import { MASKED, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { freePort } from '../../temporal-dev/index.js';
import { apiClient, startApiProcess, TRAINER } from '../support/api-process.js';
import { runClotho, spawnClotho, waitFor } from '../support/cli.js';
import { GSM8K_TEST, gsm8kItems, gsm8kResponder, gsm8kCommand } from '../support/gsm8k-model.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { startRecordingWandbServer } from '../support/wandb-server.js';
import { prometheusSamples } from '../support/prometheus.js';

let model: ScriptedOpenAI;
let dir: string;
const KEY = 'k'.repeat(40);
const temporal = () => ({ TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') });

beforeAll(async () => {
  // Item 1: both samples right; every other item: sample 0 right, sample 1 wrong.
  model = await startScriptedOpenAI({ responder: gsm8kResponder((item, sample) => item === 1 || sample === 0) });
  dir = await mkdtemp(join(tmpdir(), 'clotho-wandb-e2e-'));
});
afterAll(async () => {
  await model.close();
  await rm(dir, { recursive: true, force: true });
});

/** `clotho process gsm8k` of 4 groups of 2, one group at a time (so W&B's steps follow the items). */
const processArgs = (name: string, extra: string[] = []) => [
  'process',
  'gsm8k',
  '--env.data_path',
  GSM8K_TEST,
  '--env.total_steps',
  '4',
  '--env.group_size',
  '2',
  '--env.max_groups_in_flight',
  '1',
  '--openai.base_url',
  model.baseUrl,
  '--env.data_path_to_save_groups',
  join(dir, `${name}.jsonl`),
  '--store',
  join(dir, 'store'),
  '--env.use_wandb',
  'true',
  ...extra,
];

const readGroups = async (name: string) =>
  (await readFile(join(dir, `${name}.jsonl`), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as ScoredDataGroup);

async function readRun(root: string): Promise<{ runDir: string; records: WandbRecord[] }> {
  const [name] = await readdir(join(root, 'wandb'));
  const runDir = join(root, 'wandb', name!);
  const [file] = (await readdir(runDir)).filter((f) => f.endsWith('.wandb'));
  return { runDir, records: readTransactionLog(await readFile(join(runDir, file!))).map(decodeRecord) };
}
const row = (r: WandbRecord) => Object.fromEntries(r.history!.item.map((i) => [i.key, JSON.parse(i.value_json)]));
const lengths = (g: ScoredDataGroup) => g.masks.map((m) => m.filter((t) => t !== MASKED).length);

describe('clotho process --env.use_wandb', () => {
  it("offline: writes a W&B run directory with Atropos's metrics after every group", async () => {
    const root = join(dir, 'offline');
    const { code, stdout, stderr } = await runClotho(
      processArgs('offline', ['--env.wandb_name', 'mathrun', '--env.num_rollouts_per_group_for_logging', '-1']),
      { ...temporal(), WANDB_MODE: 'offline', WANDB_DIR: root },
    );
    expect(code).toBe(0);
    expect(stdout).toContain('groups 4/4');
    const { runDir, records } = await readRun(root);
    expect(runDir).toMatch(/offline-run-\d{8}_\d{6}-[a-z0-9]{8}$/);
    expect(stderr.trim()).toBe(`clotho process: W&B offline: logging to ${runDir}; upload it with \`wandb sync ${runDir}\``);

    const run = records.find((r) => r.run)!.run!;
    expect(run.display_name).toMatch(/^mathrun-\d{4}-\d{2}-\d{2}-[a-z]{6}$/);
    expect(run.project).toBe('uncategorized');
    const config = Object.fromEntries(run.config!.update.map((i) => [i.key, JSON.parse(i.value_json)]));
    expect(config).toMatchObject({ use_wandb: true, group_size: 2, wandb_name: 'mathrun', num_rollouts_per_group_for_logging: -1 });

    const groups = await readGroups('offline');
    const rows = records.filter((r) => r.history).map(row);
    expect(rows.map((r) => r._step)).toEqual([0, 1, 2, 3]);
    // Each step's table holds one group's two trajectories (its question, the model's answers, the scores): it
    // says which item the step logged, so the step's other metrics can be checked against that group.
    const questions = gsm8kItems().map((q) => q.question);
    const logged: number[] = [];
    for (const r of rows) {
      const table = JSON.parse(await readFile(join(runDir, 'files', r['train/rollouts'].path), 'utf8'));
      expect(table.columns).toEqual(['text', 'score']);
      const item = questions.findIndex((q) => table.data[0][0].includes(`user: ${q}\n\nassistant: `));
      logged.push(item);
      const group = groups.find((g) => g.messages![0]!.some((m) => m.role === 'user' && m.content === questions[item]))!;
      expect(table.data.map((d: [string, number]) => d[1])).toEqual(group.scores);
      for (const [text] of table.data) expect(text).toContain(`user: ${questions[item]}`);
      expect(table.data[0][0]).toMatch(/assistant: Let me work it out\. The answer is \\boxed\{\d+\}\./);
      const right = item === 1 ? 1 : 0.5;
      expect(r).toMatchObject({ 'train/percent_correct': right, 'train/correct': right, 'train/answered': 1 });
      const ls = lengths(group);
      expect(r['train/completion_lengths']).toBeCloseTo(ls.reduce((a, b) => a + b) / 2, 12);
      expect(r['train/completion_lengths_max']).toBe(Math.max(...ls));
      expect(r['train/completion_lengths_min']).toBe(Math.min(...ls));
      expect(r['train/completion_lengths_p95']).toBe(0);
      expect(r['train/rollouts']).toMatchObject({ _type: 'table-file', ncols: 2, nrows: 2 });
      expect(Object.keys(r).filter((k) => k.startsWith('server/'))).toEqual([
        'server/server_0_request_time_avg',
        'server/server_0_request_time_std',
        'server/server_0_request_time_99p',
        'server/server_0_average_num_attempts',
      ]);
      expect(r['server/server_0_average_num_attempts']).toBe(1);
    }
    expect(logged.sort()).toEqual([0, 1, 2, 3]);
    expect(records.find((r) => r.exit)!.exit).toMatchObject({ exit_code: 0 });
  });

  it('online: streams the same metrics through the W&B JavaScript SDK, and keeps the tables locally', async () => {
    const server = await startRecordingWandbServer();
    try {
      const root = join(dir, 'online');
      const { code, stderr } = await runClotho(processArgs('online'), {
        ...temporal(),
        WANDB_MODE: 'online',
        WANDB_DIR: root,
        WANDB_BASE_URL: server.url,
        WANDB_API_KEY: KEY,
        WANDB_PROJECT: 'clotho-e2e',
      });
      expect(code).toBe(0);
      const { runDir, records } = await readRun(root);
      expect(stderr.trim()).toBe(
        `clotho process: W&B: the JavaScript SDK cannot upload tables; they are kept in ${join(runDir, 'files', 'media', 'table')}`,
      );
      const run = records.find((r) => r.run)!.run!;
      expect(server.upserts()).toMatchObject([
        { name: run.run_id, displayName: run.display_name, project: 'clotho-e2e', entity: 'tester' },
      ]);
      expect(run.display_name).toMatch(/^gsm8k-\d{4}-\d{2}-\d{2}-[a-z]{6}$/);
      const streamed = server.history();
      expect(streamed.map((r) => r._step)).toEqual([0, 1, 2, 3]);
      expect(streamed.map((r) => r['train/percent_correct']).sort()).toEqual([0.5, 0.5, 0.5, 1]);
      // What W&B got is what the local transaction log has, less the tables.
      const local = records.filter((r) => r.history).map(row);
      streamed.forEach((r, i) => {
        const { _runtime: _a, _timestamp: _b, 'train/rollouts': table, ...rest } = local[i]!;
        expect(table).toBeDefined();
        expect(r).toMatchObject(rest);
        expect('train/rollouts' in r).toBe(false);
      });
      expect(server.requests.at(-1)!.body).toEqual({ complete: true, exitcode: 0 });
    } finally {
      await server.close();
    }
  });

  it('finishes the run, with the groups written, when W&B cannot be reached', async () => {
    const root = join(dir, 'unreachable');
    const { code, stderr } = await runClotho(processArgs('unreachable'), {
      ...temporal(),
      WANDB_MODE: 'online',
      WANDB_DIR: root,
      WANDB_BASE_URL: 'http://127.0.0.1:9',
      WANDB_API_KEY: KEY,
    });
    expect(code).toBe(0);
    expect(await readGroups('unreachable')).toHaveLength(4);
    const { runDir, records } = await readRun(root);
    expect(stderr).toContain(`clotho process: W&B: streaming stopped: Unable to determine default entity`);
    expect(stderr).toContain(`wandb sync ${runDir}`);
    expect(records.filter((r) => r.history)).toHaveLength(4);
  });
});

describe('clotho serve --env.use_wandb --metrics-port', () => {
  it("logs at the trainer's steps under the registered name, and serves its worker metrics", async () => {
    const api = await startApiProcess({ temporalAddress: inject('temporalAddress') });
    const root = join(dir, 'serve');
    const port = await freePort();
    let serve: ReturnType<typeof spawnClotho> | undefined;
    try {
      const http = apiClient(api.url);
      await http.post('/register', { ...TRAINER, wandb_project: 'proj-e2e', wandb_group: 'grp-e2e', batch_size: 4, num_steps: 3 });
      expect((await http.get('/batch')).json).toEqual({ batch: null });
      serve = spawnClotho(
        gsm8kCommand('serve', model.baseUrl, {
          'batcher-id': api.batcherId,
          'env.group_size': 2,
          'env.max_batches_offpolicy': 2,
          store: api.store,
          'env.use_wandb': true,
          'env.min_items_sent_before_logging': 1,
          'metrics-port': String(port),
        }),
        { ...temporal(), WANDB_MODE: 'offline', WANDB_DIR: root },
      );
      await waitFor(() => serve!.stdout().includes('registered as gsm8k_0'), 90_000, 'clotho serve to register');

      // Backpressure holds the run at 2 batches × 4 sequences = 4 groups of 2 delivered until the trainer takes a
      // batch; item 1 (both samples right) is dropped as all equal on the way.
      const scrape = async () => prometheusSamples(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      const delivered = 'clotho_groups_total{environment="gsm8k",status="delivered"}';
      await waitFor(async () => (await scrape().catch(() => new Map())).get(delivered) === 4, 60_000, 'four groups delivered');
      const m = await scrape();
      expect(m.get('clotho_groups_in_flight{environment="gsm8k"}')).toBe(0);
      expect(m.get('clotho_groups_total{environment="gsm8k",status="dropped",reason="scores_all_equal"}')).toBe(1);
      // A single-turn group is one takeTurns (prepare, generate, parse, score, assemble), also for the group it drops.
      expect(m.get('clotho_activity_attempts_total{activity="takeTurns",outcome="completed"}')).toBe(5);
      expect(m.get('clotho_activity_duration_seconds_count{activity="takeTurns",outcome="completed"}')).toBe(5);
      // No attempt failed and none was retried (series that exist at 0, such as failed evaluations, say nothing).
      const failures = [...m].filter(
        ([k, v]) => (k.includes('outcome="failed"') || k.startsWith('clotho_activity_retries_total')) && v > 0,
      );
      expect(failures).toEqual([]);
      expect(m.get('clotho_completion_tokens_total{activity="takeTurns"}')).toBeGreaterThan(0);

      // The trainer's step is the batches formed so far (num_steps 3 stops new groups); serve logs when a poll sees it move
      // on, at that step, what finished since the last log. The trainer takes batches until serve stops.
      const exited = serve.exited;
      let done = false;
      void exited.then(() => (done = true));
      await waitFor(async () => done || void (await http.get('/batch')) || done, 120_000, 'serve to reach the last step');
      expect(await exited).toBe(0);
      const deliveredGroups = Number(serve.stdout().match(/delivered (\d+) groups/)![1]);

      const { runDir, records } = await readRun(root);
      const run = records.find((r) => r.run)!.run!;
      expect(run).toMatchObject({ project: 'proj-e2e', run_group: 'grp-e2e' });
      expect(run.display_name).toMatch(/^gsm8k-\d{4}-\d{2}-\d{2}-[a-z]{6}$/);
      const rows = records.filter((r) => r.history).map(row);
      expect(rows.length).toBeGreaterThan(0);
      rows.forEach((r, i) => {
        expect(r._step).toBeGreaterThanOrEqual(1);
        if (i > 0) expect(r._step).toBeGreaterThan(rows[i - 1]!._step);
        // Keys carry the name the trainer registered the environment under; the server's are shared by all.
        expect(Object.keys(r).filter((k) => !k.startsWith('gsm8k_0_train') && !k.startsWith('_'))).toEqual([
          'server/server_0_request_time_avg',
          'server/server_0_request_time_std',
          'server/server_0_request_time_99p',
          'server/server_0_average_num_attempts',
        ]);
        expect(r['gsm8k_0_train/percent_correct']).toBeGreaterThanOrEqual(0.5);
        expect(r['gsm8k_0_train/rollouts']).toMatchObject({ _type: 'table-file', ncols: 2 });
      });
      // One table row per delivered group logged (num_rollouts_per_group_for_logging 1). Groups reported after the
      // last step change are not logged, as in Atropos, so how many made it depends on timing.
      const logged = rows.reduce((n, r) => n + r['gsm8k_0_train/rollouts'].nrows, 0);
      expect(logged).toBeGreaterThanOrEqual(1);
      expect(logged).toBeLessThanOrEqual(deliveredGroups);
      expect(serve.stderr()).toContain(`W&B offline: logging to ${runDir}`);
    } finally {
      if (serve && serve.child.exitCode === null) serve.child.kill('SIGKILL');
      await api.stop();
    }
  });
});

describe('clotho evaluate --env.use_wandb', () => {
  it("logs Atropos's eval metrics to a W&B run at step 0", async () => {
    const halfRight = await startScriptedOpenAI({ responder: gsm8kResponder((item) => item % 2 === 0) });
    try {
      const root = join(dir, 'eval');
      const { code, stdout } = await runClotho(gsm8kCommand('evaluate', halfRight.baseUrl, { items: 4, 'env.use_wandb': true }), {
        WANDB_MODE: 'offline',
        WANDB_DIR: root,
      });
      expect(code).toBe(0);
      expect(JSON.parse(stdout.slice(0, stdout.lastIndexOf('}') + 1))).toMatchObject({ items: 4, score: 0, correct: 0.5 });
      const { records } = await readRun(root);
      expect(records.find((r) => r.run)!.run!.display_name).toMatch(/^gsm8k-eval-\d{4}-\d{2}-\d{2}-[a-z]{6}$/);
      const rows = records.filter((r) => r.history).map(row);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        _step: 0,
        'eval/percent_correct': 0.5,
        'eval/correct': 0.5,
        'eval/answered': 1,
        'eval/items': 4,
        'eval/score': 0,
      });
    } finally {
      await halfRight.close();
    }
  });
});
