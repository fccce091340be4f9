import { WorkflowFailedError } from '@temporalio/client';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import gsm8k from '../../environments/gsm8k/index.js';
import { envRun } from '../../src/workflows/env-run.js';
import { batcherViewQuery } from '../../src/workflows/messages.js';
import { startedBy } from '../../src/cli/versions.js';
import { apiClient, startApiProcess, TRAINER, type ApiProcess } from '../support/api-process.js';
import { batcherEnvRunInput } from '../support/batchers.js';
import { spawnClotho, waitFor } from '../support/cli.js';
import { GSM8K_TEST, gsm8kResponder } from '../support/gsm8k-model.js';
import { startHarness, type Harness } from '../support/harness.js';
import { settled, testConnection, uniqueId } from '../support/temporal.js';
import { BATCHER_TASK_QUEUE } from '../../src/workers/workers.js';

let harness: Harness | undefined;
let api: ApiProcess | undefined;
afterEach(async () => {
  await api?.stop();
  await harness?.close();
  api = harness = undefined;
});

describe('a new training run ends the one before it, whatever happens to the clotho api that started it', () => {
  it('after a kill -9 of clotho api right after the new run started: the old batcher ends and its env-run is told', async () => {
    harness = await startHarness({
      environment: gsm8k,
      envConfig: { data_path: GSM8K_TEST, group_size: 4 },
      responder: gsm8kResponder((_item, sample) => sample === 0),
    });
    const { client } = harness.temporal;
    // Holds the process right after it started the new run's batcher, until the test kills it there.
    api = await startApiProcess({ temporalAddress: inject('temporalAddress'), env: { CLOTHO_TEST_HOLD_AFTER_RUN_START: '1' } });
    const http = apiClient(api.url);
    expect((await http.post('/register', TRAINER)).status).toBe(200);
    await http.get('/batch');
    const env = await http.post('/register-env', { max_token_length: 4096, desired_name: 'gsm8k', weight: 1, group_size: 4 });
    expect(env.json).toMatchObject({ status: 'success', env_id: 0 });

    // An env-run feeding training run 1, waiting for room with one group in the batcher.
    const old = client.workflow.getHandle(api.batcherId);
    const run = await client.workflow.start(envRun, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('env-run'),
      args: [batcherEnvRunInput(harness, api.batcherId)],
      ...startedBy(false),
    });
    await waitFor(
      async () => (await old.query(batcherViewQuery)).metrics.waiting['0']?.queued === 1 && (await settled(old)) && (await settled(run)),
      60_000,
      'the first group in the batcher, and both workflows settled',
    );

    // A new run asked for; the process dies the moment the new batcher is started.
    const registering = http.post('/register?new_run=true', TRAINER).catch((error: unknown) => error);
    const holding = api.run;
    await waitFor(() => holding.stdout().includes('holding after starting training run 2'), 60_000, 'the new run to start');
    holding.child.kill('SIGKILL');
    await holding.exited;
    await registering;

    // The API comes back (serving run 2): the old run is ended and the env-run fails naming it, with no one asking.
    await api.restart({});
    await waitFor(async () => (await old.describe()).status.name !== 'RUNNING', 60_000, 'training run 1 to end');
    const failure = await run.result().then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause?.message).toContain(`the batcher this run feeds, ${api.batcherId}, was ended`);
    expect((failure as WorkflowFailedError).cause?.message).toContain(`superseded by training run 2 (${api.batcherId}/run-2)`);
    expect((await old.describe()).status.name).not.toBe('RUNNING');
    // Told by the new run's batcher, which met no error doing so.
    expect(await old.result()).toMatchObject({ supersededBy: `${api.batcherId}/run-2`, watchersTold: 1 });
    const metrics = await http.get('/metrics');
    expect(metrics.text).toContain('clotho_supersession_errors_total 0');
  }, 300_000);

  it('clotho api --new-run terminates a batcher this version cannot replay rather than wake it, and says so', async () => {
    const { client } = await testConnection();
    const batcherId = uniqueId('old-batcher');
    // A batcher as a Clotho before versions started it: no worker of this version may run a task of it.
    const old = await client.workflow.start('batcher', {
      workflowId: batcherId,
      taskQueue: BATCHER_TASK_QUEUE,
      args: [{ trainer: { kind: 'http' } }],
    });
    const store = await mkdtemp(join(tmpdir(), 'clotho-api-store-'));
    const run = spawnClotho(['api', '--port', '0', '--batcher-id', batcherId, '--store', store, '--new-run'], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
    });
    try {
      await waitFor(() => run.stdout().includes('listening on') || run.child.exitCode !== null, 90_000, 'clotho api to listen');
      expect(run.stderr()).toContain(
        `clotho api: training run 1 (${batcherId}) was started by a Clotho older than the replay baseline: terminated; the env-runs feeding it are not told`,
      );
      expect((await old.describe()).status.name).toBe('TERMINATED');
      expect((await client.workflow.getHandle(`${batcherId}/run-2`).describe()).status.name).toBe('RUNNING');
      expect(run.stderr()).not.toMatch(/nondetermin/i);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
      await client.workflow.getHandle(`${batcherId}/run-2`).terminate('test over');
      await rm(store, { recursive: true, force: true });
    }
  });
});
