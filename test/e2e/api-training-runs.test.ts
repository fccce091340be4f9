import { describe, expect, inject, it } from 'vitest';
import { waitFor } from '../support/cli.js';
import { apiClient, group, sharedApiProcess, startApiProcess } from '../support/api-process.js';
import { testConnection } from '../support/temporal.js';
import { AXOLOTL, EXAMPLE_TRAINER, TINKER_ATROPOS } from '../support/trainer-bodies.js';

/**
 * Atropos's trainers against one long-lived `clotho api`, each twice in a row as two training runs, with the request
 * sequence each sends: (`GET /info` for the example trainer), `POST /register`, then `GET /batch` polls while an
 * environment registers and posts. None calls `/reset_data`.
 */
const shared = sharedApiProcess();

type Body = typeof EXAMPLE_TRAINER | typeof AXOLOTL | ReturnType<typeof TINKER_ATROPOS>;
const tags = (batch: { tokens: number[][] }[]) => batch.map((g) => g.tokens[0]![0]);
const sequences = (batch: { tokens: number[][] }[]) => batch.reduce((n, g) => n + g.tokens.length, 0);
let nextTag = 1;

/**
 * The start of a training run: the trainer registers, an environment registers (told to wait until the trainer's
 * first `GET /batch`, then joining at step 0) and posts `groups` groups of 2 sequences. Returns the groups' tags.
 */
async function startRun(body: Body, groups: number): Promise<number[]> {
  const registered = await shared.http.post('/register', body);
  expect(registered.status, registered.text).toBe(200);
  expect(registered.text).toMatch(/^\{"uuid":\d+\}$/);
  const env = { max_token_length: body.max_token_len, desired_name: 'env', weight: 1, group_size: 2 };
  expect((await shared.http.post('/register-env', env)).json).toEqual({ status: 'wait for trainer to start' });
  expect((await shared.http.get('/batch')).json).toEqual({ batch: null });
  const joined = (await shared.http.post('/register-env', env)).json;
  expect(joined).toMatchObject({ status: 'success', starting_step: 0, num_steps: body.num_steps, checkpoint_dir: body.checkpoint_dir });
  const posted = Array.from({ length: groups }, () => nextTag++);
  expect(
    (
      await shared.http.post(
        '/scored_data_list',
        posted.map((t) => group(t, 2, joined.env_id)),
      )
    ).status,
  ).toBe(200);
  return posted;
}

/**
 * One training run as the trainer and an environment play it: register, poll until the env is in, two batches of
 * `batch_size` sequences, and one group left queued behind them. Returns the tags of the groups served and left.
 */
async function playRun(body: Body, { pollInfo = false } = {}) {
  if (pollInfo) expect((await shared.http.get('/info')).status).toBe(200);
  const posted = await startRun(body, body.batch_size + 1);
  const served: (number | undefined)[] = [];
  for (let i = 0; i < 2; i++) {
    const batch = (await shared.http.get('/batch')).json.batch;
    expect(sequences(batch)).toBe(body.batch_size);
    served.push(...tags(batch));
  }
  expect((await shared.http.get('/status')).json).toEqual({ current_step: 2, queue_size: 1 });
  return { served, left: posted.filter((t) => !served.includes(t)) };
}

/** What the API reports of the run it serves: its settings, and the run its status line names last. */
async function expectServing(body: Body, run: number) {
  expect((await shared.http.get('/info')).json).toEqual({ batch_size: body.batch_size, max_token_len: body.max_token_len });
  expect((await shared.http.get('/wandb_info')).json).toEqual({ group: body.wandb_group, project: body.wandb_project });
  const lines = shared.api.run
    .stdout()
    .split('\n')
    .filter((l) => l.includes('training run'));
  expect(lines.at(-1)).toContain(
    `training run ${run} (batcher ${run === 1 ? shared.api.batcherId : `${shared.api.batcherId}/run-${run}`})`,
  );
}

/** The run's batcher workflow was ended by the next run (its first act), and is still there to open. */
async function expectKept(run: number) {
  const { client } = await testConnection();
  const id = run === 1 ? shared.api.batcherId : `${shared.api.batcherId}/run-${run}`;
  const next = `${shared.api.batcherId}/run-${run + 1}`;
  expect(await client.workflow.getHandle(id).result()).toMatchObject({
    supersededBy: next,
    reason: `superseded by training run ${run + 1} (${next})`,
  });
}

describe('a second training run against the same clotho api gets its own configuration', () => {
  it("Atropos's example trainer: a second run with other settings, then the API restarted serves that run", async () => {
    await playRun(EXAMPLE_TRAINER, { pollInfo: true });
    await expectServing(EXAMPLE_TRAINER, 1);
    const second = { ...EXAMPLE_TRAINER, batch_size: 8, max_token_len: 4096, num_steps: 20 };
    const { served } = await playRun(second, { pollInfo: true });
    expect(served).toHaveLength(8);
    await expectServing(second, 2);
    await expectKept(1);

    shared.api.run.child.kill('SIGTERM');
    await shared.api.run.exited;
    await shared.api.restart();
    await expectServing(second, 2);
    expect((await shared.http.get('/status')).json).toEqual({ current_step: 2, queue_size: 1 });
  });

  it("Axolotl's plugin: resumes at its starting step, refuses a step past the batcher's, and starts a new run from step 0", async () => {
    const first = await playRun(AXOLOTL);
    await expectServing(AXOLOTL, 3);
    await expectKept(2);

    // The same trainer back from its checkpoint at step 2 (atropos_starting_step): the run and its queue are kept.
    expect((await shared.http.post('/register', { ...AXOLOTL, starting_step: 2 })).status).toBe(200);
    expect((await shared.http.get('/status')).json).toEqual({ current_step: 2, queue_size: 1 });
    expect(shared.api.run.stdout()).toContain('came back, resumed');

    // A step the batcher never reached: could be either, so refused in words, naming both and the way on.
    const ahead = await shared.http.post('/register', { ...AXOLOTL, starting_step: 9 });
    expect(ahead.status).toBe(409);
    expect(ahead.json.detail).toContain('"starting_step":2');
    expect(ahead.json.detail).toContain('"starting_step":9');
    expect(ahead.json.detail).toContain('new_run=true');

    // The same body again, from step 0: a new run, without the first run's queued group.
    const second = await playRun(AXOLOTL);
    expect(second.served).not.toContain(first.left[0]);
    await expectServing(AXOLOTL, 4);
    await expectKept(3);
  });

  it('tinker-atropos: a new wandb group is a new run, and ?new_run=true starts one on request', async () => {
    await playRun(TINKER_ATROPOS('k3j9x2ab'));
    await expectServing(TINKER_ATROPOS('k3j9x2ab'), 5);
    await playRun(TINKER_ATROPOS('p0q8w7zz'));
    await expectServing(TINKER_ATROPOS('p0q8w7zz'), 6);
    await expectKept(5);

    expect((await shared.http.post('/register?new_run=true', TINKER_ATROPOS('p0q8w7zz'))).status).toBe(200);
    expect((await shared.http.get('/status')).json).toEqual({ current_step: 0, queue_size: 0 });
    await expectServing(TINKER_ATROPOS('p0q8w7zz'), 7);
  });

  it('a trainer back at step 0 before its first ack is the same run, though a batch was formed; after an ack, a new one', async () => {
    const body = TINKER_ATROPOS('lease-crash');
    // Groups of 2 sequences: one batch of batch_size.
    const posted = await startRun(body, body.batch_size / 2);
    const leased = (await shared.http.get('/batch?lease_seconds=60')).json;
    expect(tags(leased.batch)).toEqual(posted);
    expect((await shared.http.get('/status')).json).toEqual({ current_step: 1, queue_size: 0 });

    // Killed before acking: it comes back at step 0, and finds its run and its leased batch.
    expect((await shared.http.post('/register', body)).status).toBe(200);
    expect(shared.api.run.stdout().trimEnd().split('\n').at(-1)).toContain('the same trainer came back, resumed');
    await expectServing(body, 8);
    expect((await shared.http.post('/batch/ack', { batch_id: leased.batch_id })).status).toBe(200);

    // Once it has trained on a batch, step 0 is a new run (Atropos's example trainer always registers at 0).
    expect((await shared.http.post('/register', body)).status).toBe(200);
    await expectServing(body, 9);
    await expectKept(8);
  });
});

describe('clotho api --trainer temporal refuses HTTP trainers in words', () => {
  it('refuses /register at once and answers /batch with the error shape, while the Temporal trainer registers', async () => {
    const temporal = await startApiProcess({ temporalAddress: inject('temporalAddress'), args: ['--trainer', 'temporal'] });
    try {
      const client = apiClient(temporal.url);
      for (const body of [EXAMPLE_TRAINER, AXOLOTL, TINKER_ATROPOS('x')]) {
        const refused = await client.post('/register', body);
        expect(refused.status).toBe(409);
        expect(refused.json.detail).toContain('Temporal-trainer mode');
      }
      expect((await client.post('/register?trainer=temporal', EXAMPLE_TRAINER)).status).toBe(200);
      const batch = await client.get('/batch');
      expect(batch.status).toBe(200);
      expect(batch.json).toEqual({ status: 'error', message: expect.stringContaining('Temporal-trainer mode'), batch: [] });
    } finally {
      await temporal.stop();
    }
  });
});

describe('clotho run-api', () => {
  it("starts by name with run-api's flags, and serves", async () => {
    const runApi = await startApiProcess({ temporalAddress: inject('temporalAddress'), command: 'run-api', args: ['--reload'] });
    try {
      await waitFor(async () => (await apiClient(runApi.url).get('/')).status === 200, 30_000, 'run-api to answer');
      expect((await apiClient(runApi.url).get('/')).json).toEqual({ message: 'AtroposLib API' });
      expect(runApi.run.stderr()).toContain('--reload');
    } finally {
      await runApi.stop();
    }
  });
});
