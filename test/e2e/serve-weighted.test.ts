import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { envRunId } from '../../src/cli/commands/process.js';
import { rolloutGroupId } from '../../src/workflows/messages.js';
import type { Message } from '../../src/schema/scored-data.js';
import { apiClient, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { spawnClotho, waitFor, type CliRun } from '../support/cli.js';
import { GSM8K_TEST } from '../support/gsm8k-model.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

/**
 * Issue 13, point 6: several environments in one run, as Atropos runs them. One `clotho api`; `clotho serve` of two
 * environments from the YAML examples, gsm8k with weight 2 and dataset with weight 1, under one run id; one more
 * `clotho worker` for gsm8k alone; a trainer that takes batches. The batcher gives each env its weighted share of
 * the room (1 batch of 3 groups: 2 and 1), so once both are registered each batch holds two gsm8k groups and one
 * dataset group, and every group the envs delivered reaches the trainer once or waits in the queue at the end.
 */

const EXAMPLES = new URL('../../examples/two-environments/', import.meta.url);
const GROUP_SIZE = 2;
/** Sequences per batch: three groups, the whole room of both envs together (max_batches_offpolicy 1). */
const BATCH_SIZE = 3 * GROUP_SIZE;
const STEPS = 7;
const RECORD = process.env.CLOTHO_RECORD_HISTORIES === '1';

const text = (m: Message | undefined) => (typeof m?.content === 'string' ? m.content : '');

let api: ApiProcess | undefined;
let model: ScriptedOpenAI | undefined;
let connection: Connection | undefined;
const children: CliRun[] = [];
afterAll(async () => {
  for (const child of children) if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGKILL');
  await api?.stop();
  await model?.close();
  await connection?.close();
});

interface Group {
  env_id: number;
  messages: Message[][] | null;
  tokens: number[][];
}

describe('two environments with weights in one run', () => {
  it('mixes batches 2:1 by weight, scales one env with a worker of its own, and delivers every group once', async () => {
    const address = inject('temporalAddress');
    const server = (api = await startApiProcess({ temporalAddress: address }));
    // A little latency per call, so that groups are in flight on both of gsm8k's processes at once.
    const policy = (model = await startScriptedOpenAI({
      responder: async (body) => {
        await new Promise((resolve) => setTimeout(resolve, 150));
        return { choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: `The answer is \\boxed{${i}}.` })) };
      },
    }));
    const http = apiClient(server.url);
    await http.post('/register', { ...TRAINER, batch_size: BATCH_SIZE, num_steps: STEPS, max_token_len: 4096 });
    // The trainer's first GET /batch lets environments register (Atropos's rule).
    expect((await http.get('/batch')).json).toEqual({ batch: null });

    const runId = uniqueId('weighted');
    const flags = (yaml: string) => [
      '--config',
      fileURLToPath(new URL(yaml, EXAMPLES)),
      '--env.run_id',
      runId,
      '--env.data_path',
      GSM8K_TEST,
      '--env.group_size',
      String(GROUP_SIZE),
      '--env.max_batches_offpolicy',
      '1',
      '--env.ensure_scores_are_not_same',
      'false',
      '--openai.base_url',
      policy.baseUrl,
      '--store',
      server.store,
    ];
    const env = { TEMPORAL_ADDRESS: address };
    const spawn = (args: string[]) => {
      const run = spawnClotho(args, env);
      children.push(run);
      return run;
    };
    // The extra worker first: it polls gsm8k's queues of the run before there is work on them.
    const extra = spawn(['worker', 'gsm8k', ...flags('gsm8k.yaml')]);
    await waitFor(() => extra.stdout().includes('polling') || extra.child.exitCode !== null, 120_000, 'the gsm8k worker to poll');
    expect(extra.stdout()).toContain(`clotho-workflows@${runId}/gsm8k`);
    const serves = {
      gsm8k: spawn(['serve', 'gsm8k', '--batcher-id', server.batcherId, ...flags('gsm8k.yaml')]),
      dataset: spawn(['serve', 'dataset', '--batcher-id', server.batcherId, ...flags('math.yaml')]),
    };
    const envIds: Record<string, number> = {};
    for (const [name, run] of Object.entries(serves)) {
      await waitFor(() => /env_id \d+/.test(run.stdout()) || run.child.exitCode !== null, 150_000, `serve ${name} to register`);
      expect(run.stderr(), name).toBe('');
      envIds[name] = Number(/env_id (\d+)/.exec(run.stdout())![1]);
    }
    const nameOf = new Map(Object.entries(envIds).map(([name, id]) => [id, name]));
    // The weights from the YAML files, as Atropos's /status-env reports them (same max_token_length: 2/3 and 1/3).
    const weight = async (envId: number) => (await http.getWithBody('/status-env', { env_id: envId })).json.env_weight as number;
    expect(await weight(envIds.gsm8k!)).toBeCloseTo(2 / 3);
    expect(await weight(envIds.dataset!)).toBeCloseTo(1 / 3);

    // The trainer takes a batch whenever the queue holds the envs' whole room: the batches then show the shares.
    const batches: Group[][] = [];
    while (batches.length < STEPS) {
      await waitFor(async () => (await http.get('/status')).json.queue_size >= 3, 120_000, `a full queue for batch ${batches.length + 1}`);
      const { batch } = (await http.get('/batch')).json as { batch: Group[] | null };
      expect(batch, `batch ${batches.length + 1}`).not.toBeNull();
      batches.push(batch!);
    }
    const mix = batches.map((batch) =>
      batch
        .map((g) => nameOf.get(g.env_id))
        .sort()
        .join('+'),
    );
    console.log(`weighted batches: ${mix.join(', ')}`);
    // The first batch may hold what gsm8k queued before dataset registered (alone, its share was the whole room).
    for (const [i, groups] of mix.entries()) if (i > 0) expect(groups, `batch ${i + 1}`).toBe('dataset+gsm8k+gsm8k');

    // The trainer took its last step: both serves finish what is in flight and exit.
    for (const [name, run] of Object.entries(serves)) expect(await run.exited, `${name}: ${run.stderr()}`).toBe(0);
    // Every group once: none twice in the batches, and those trained plus those still queued are all each env delivered.
    const trained = new Map<string, number>();
    for (const group of batches.flat()) {
      expect(group.tokens).toHaveLength(GROUP_SIZE);
      const name = nameOf.get(group.env_id)!;
      const question = text(group.messages![0]!.find((m) => m.role === 'user'));
      const key = `${name}: ${question}`;
      expect(trained.has(key), `${key} trained twice`).toBe(false);
      trained.set(key, group.env_id);
    }
    for (const [name, run] of Object.entries(serves)) {
      const delivered = Number(/delivered (\d+) groups; failed 0/.exec(run.stdout())?.[1]);
      const queued = (await http.getWithBody('/status-env', { env_id: envIds[name] })).json.self_queue_size as number;
      const took = [...trained.values()].filter((id) => id === envIds[name]).length;
      expect(took + queued, `${name}: ${took} trained + ${queued} queued = ${delivered} delivered`).toBe(delivered);
    }

    // gsm8k's extra worker ran part of gsm8k's groups and nothing of dataset's: each env has its own task queues.
    connection = await Connection.connect({ address });
    const client = new Client({ connection });
    const takers = async (environment: string, groups: number) => {
      const identities = new Set<string>();
      for (let item = 0; item < groups; item++) {
        const history = await client.workflow.getHandle(rolloutGroupId(runId, environment, item)).fetchHistory();
        for (const event of history.events ?? []) {
          const identity = event.workflowTaskStartedEventAttributes?.identity ?? event.activityTaskStartedEventAttributes?.identity;
          if (identity) identities.add(identity.split('@')[0]!);
        }
      }
      return identities;
    };
    const extraPid = String(extra.child.pid);
    const gsm8kTakers = await takers('gsm8k', [...trained.values()].filter((id) => id === envIds.gsm8k).length);
    const datasetTakers = await takers('dataset', [...trained.values()].filter((id) => id === envIds.dataset).length);
    expect(gsm8kTakers).toContain(extraPid);
    expect(gsm8kTakers).toContain(String(serves.gsm8k.child.pid));
    expect([...datasetTakers]).toEqual([String(serves.dataset.child.pid)]);

    if (RECORD) {
      // Histories with weighted room pushes, for test/replay (CLOTHO_RECORD_HISTORIES=1).
      const histories = fileURLToPath(new URL('../replay/histories/', import.meta.url));
      const batcherHistory = await client.workflow.getHandle(server.batcherId).fetchHistory();
      await writeFile(`${histories}batcher-weighted.json`, historyToJSON(batcherHistory));
      const envRunHistory = await client.workflow.getHandle(envRunId(runId, 'gsm8k')).fetchHistory();
      await writeFile(`${histories}env-run-weighted-launch-first.json`, historyToJSON(envRunHistory));
    }
  }, 300_000);
});
