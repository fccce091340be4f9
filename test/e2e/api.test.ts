import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { resetUpdate } from '../../src/workflows/messages.js';
import { waitFor } from '../support/cli.js';
import { group, sharedApiProcess, TRAINER } from '../support/api-process.js';
import { testConnection } from '../support/temporal.js';

const shared = sharedApiProcess();

const firstTokens = (batch: { tokens: number[][] }[]) => batch.map((g) => g.tokens[0]![0]);

describe('clotho api, black box: the calls an Atropos environment and trainer make', () => {
  it('serves the whole sequence with Atropos shapes', async () => {
    expect((await shared.http.get('/reset_data')).text).toBe('Reset successful');
    expect((await shared.http.get('/')).json).toEqual({ message: 'AtroposLib API' });
    expect((await shared.http.get('/info')).json).toEqual({ batch_size: -1, max_token_len: -1 });
    expect((await shared.http.get('/batch')).json).toEqual({
      status: 'error',
      message: 'Trainer not registered. Call /register first.',
      batch: [],
    });

    const registered = await shared.http.post('/register', TRAINER);
    expect(registered.text).toMatch(/^\{"uuid":\d+\}$/);
    expect((await shared.http.get('/info')).json).toEqual({ batch_size: 4, max_token_len: 2048 });
    expect((await shared.http.get('/wandb_info')).json).toEqual({ group: 'g', project: 'p' });

    const env = { max_token_length: 2048, desired_name: 'gsm8k', weight: 1, group_size: 2 };
    expect((await shared.http.post('/register-env', env)).json).toEqual({ status: 'wait for trainer to start' });
    expect((await shared.http.get('/batch')).json).toEqual({ batch: null });
    expect((await shared.http.post('/register-env', env)).json).toEqual({
      status: 'success',
      env_id: 0,
      wandb_name: 'gsm8k_0',
      checkpoint_dir: 'ckpt',
      starting_step: 0,
      checkpoint_interval: 10,
      num_steps: 100,
    });

    expect((await shared.http.post('/scored_data', group(1))).json).toEqual({ status: 'received' });
    expect((await shared.http.post('/scored_data_list', [group(2), group(3)])).json).toEqual({ status: 'received', groups_processed: 2 });
    const gzipped = gzipSync(JSON.stringify(group(4)));
    expect((await shared.http.post('/scored_data', gzipped, { 'content-encoding': 'gzip' })).json).toEqual({ status: 'received' });
    // A group smaller than the env's group size waits in the env's buffer.
    expect((await shared.http.post('/scored_data', group(5, 1))).json).toEqual({ status: 'buffered', buffer_size: 1 });

    expect((await shared.http.get('/status')).json).toEqual({ current_step: 0, queue_size: 4 });
    const statusEnv = await shared.http.getWithBody('/status-env', { env_id: 0 });
    expect(statusEnv.json).toEqual({
      current_step: 0,
      queue_size: 4,
      unallocated_fraction: 1,
      self_queue_size: 4,
      max_group_size: 2,
      env_weight: 1,
    });
    expect((await shared.http.get('/status-env?env_id=0')).json).toEqual(statusEnv.json);
    expect((await shared.http.get('/latest_example')).json.tokens[0][0]).toBe(4);

    // Two batches of 4 sequences form at once; Atropos serves the newest first and counts the step at formation.
    const first = (await shared.http.get('/batch')).json;
    expect(Object.keys(first)).toEqual(['batch']);
    expect(firstTokens(first.batch)).toEqual([3, 4]);
    expect(Object.keys(first.batch[0]).length).toBe(14);
    expect((await shared.http.get('/status')).json).toEqual({ current_step: 2, queue_size: 0 });
    expect(firstTokens((await shared.http.get('/batch')).json.batch)).toEqual([1, 2]);
    expect((await shared.http.get('/batch')).json).toEqual({ batch: null });
    expect((await shared.http.post('/disconnect-env', { env_id: 0 })).json).toEqual({ status: 'success' });
  });

  it('rejects bad input with the field that is wrong, and never queues it', async () => {
    await shared.http.get('/reset_data');
    await shared.http.post('/register', TRAINER);
    const before = (await shared.http.get('/status')).json;
    const noRole = { ...group(9), messages: [[{ content: 'hi' }], [{ role: 'user', content: 'x' }]] };
    const cases: [unknown, string][] = [
      [noRole, 'messages'],
      [{ ...group(9), masks: [[-100, 1]] }, 'masks'],
      [{ ...group(9), scores: ['high', 1] }, 'scores'],
      [
        {
          ...group(9),
          inference_logprobs: [
            [1, 1],
            [1, 1, 1],
          ],
        },
        'inference_logprobs',
      ],
      [{ ...group(9), env_id: 42 }, 'env_id'],
    ];
    for (const [body, field] of cases) {
      const response = await shared.http.post('/scored_data', body);
      expect(response.status, field).toBe(422);
      expect(JSON.stringify(response.json.detail), field).toContain(field);
    }
    const badGzip = await shared.http.post('/scored_data', 'not gzip at all', { 'content-encoding': 'gzip' });
    expect([badGzip.status, badGzip.text]).toEqual([400, 'Invalid gzip payload']);
    expect((await shared.http.post('/scored_data', '{"tokens": [')).status).toBe(422);
    expect((await shared.http.get('/status')).json).toEqual(before);
  });

  it('queues a retried post with the same idempotency key once', async () => {
    await shared.http.get('/reset_data');
    await shared.http.post('/register', { ...TRAINER, batch_size: 2 });
    const received = async () => Number((await shared.http.get('/metrics')).text.match(/^clotho_groups_received_total (\d+)$/m)![1]);
    const before = await received();
    const post = () => shared.http.post('/scored_data', { ...group(7, 2, null), idempotency_key: 'retry-me' });
    expect((await post()).json).toEqual({ status: 'received' });
    expect((await post()).json).toEqual({ status: 'received', duplicate: true });
    expect((await shared.http.get('/status')).json.queue_size).toBe(1);
    expect(await received()).toBe(before + 1);
  });

  it('answers 422 for an env id a reset elsewhere forgot, though this API had seen it registered', async () => {
    await shared.http.get('/reset_data');
    await shared.http.post('/register', TRAINER);
    await shared.http.get('/batch');
    const env = (await shared.http.post('/register-env', { max_token_length: 2048, desired_name: 'e', weight: 1, group_size: 2 })).json;
    expect((await shared.http.post('/scored_data', group(1, 2, env.env_id))).json).toEqual({ status: 'received' });
    // Another API process resets the batcher: this one still believes env 0 exists.
    const { client } = await testConnection();
    await client.workflow.getHandle(shared.api.batcherId).executeUpdate(resetUpdate, { args: [] });
    await shared.http.post('/register', TRAINER);
    const response = await shared.http.post('/scored_data', group(2, 2, env.env_id));
    expect(response.status).toBe(422);
    expect(JSON.stringify(response.json.detail)).toContain('env_id');
  });
});

describe('clotho api, Atropos parity: what Atropos accepts and how its JSON reads', () => {
  /** A group posted as raw JSON text, so that `1.0` and a 20-digit seed reach the API as written. */
  const rawGroup = (tag: number) => `{"tokens": [[${tag}, 101, 102], [${tag}, 201, 202]], "masks": [[-100, 101, 102], [-100, 201, 202]],
    "scores": [1, 0], "inference_logprobs": [[1.0, -1, -0.5], [1, -2.0, -0.25]], "advantages": [[1, 1, 1], [0, 0, 0]],
    "generation_params": {"temperature": 1.0, "top_p": 0.95, "max_tokens": 64, "seed": 12345678901234567890},
    "overrides": [{"temperature": 2.0}, {"set_advantage_to_zero": true}], "group_overrides": {"group_size": 2, "weight": 1.50},
    "messages": [[{"role": "assistant", "content": "a", "reward": 1.0}], [{"role": "assistant", "content": "b", "reward": 0}]],
    "env_id": 0}`;

  it('serves whole-number floats as 1.0 and free-form fields exactly as posted, through the batcher and the store', async () => {
    await shared.http.get('/reset_data');
    await shared.http.post('/register', TRAINER);
    await shared.http.get('/batch');
    await shared.http.post('/register-env', { max_token_length: 2048, desired_name: 'floats', weight: 1, group_size: 2 });
    expect((await shared.http.post('/scored_data', rawGroup(1))).json).toEqual({ status: 'received' });
    expect((await shared.http.post('/scored_data_list', `[${rawGroup(2)}]`)).json).toEqual({ status: 'received', groups_processed: 1 });

    const expectAsPosted = (text: string) => {
      expect(text).toContain('"scores":[1.0,0.0]');
      expect(text).toContain('"inference_logprobs":[[1.0,-1.0,-0.5],[1.0,-2.0,-0.25]]');
      expect(text).toContain('"advantages":[[1.0,1.0,1.0],[0.0,0.0,0.0]]');
      expect(text).toContain('"generation_params":{"temperature":1.0,"top_p":0.95,"max_tokens":64,"seed":12345678901234567890}');
      expect(text).toContain('"overrides":[{"temperature":2.0},{"set_advantage_to_zero":true}]');
      expect(text).toContain('"group_overrides":{"group_size":2,"weight":1.50}');
      expect(text).toContain(
        '"messages":[[{"role":"assistant","content":"a","reward":1.0}],[{"role":"assistant","content":"b","reward":0}]]',
      );
      expect(text).toContain('"tokens":[[');
      expect(text).toMatch(/"env_id":0,/);
    };
    expectAsPosted((await shared.http.get('/latest_example')).text);
    const status = await shared.http.call('GET', '/status-env?env_id=0');
    expect(status.text).toMatch(/"unallocated_fraction":1\.0,.*"env_weight":1\.0\}$/);

    const leased = await shared.http.get('/batch?lease_seconds=60');
    expect(leased.json.batch.map((g: { tokens: number[][] }) => g.tokens[0]![0])).toEqual([1, 2]);
    for (const group of leased.text.match(/\{"tokens".*?"distill_logprobs":null\}/g)!) expectAsPosted(group);
    const byId = await shared.http.get(`/batch/${leased.json.batch_id}`);
    expect(byId.text).toContain(leased.text.slice('{"batch":'.length, leased.text.indexOf(',"batch_id"')));
  });

  it('accepts object message content and advantages that do not align with tokens, counting and logging them', async () => {
    await shared.http.get('/reset_data');
    await shared.http.post('/register', { ...TRAINER, batch_size: 2 });
    const odd = {
      ...group(5, 2, null),
      messages: [
        [{ role: 'user', content: { text: 'Complex content', metadata: { nested: { deeply: ['list'] } } } }],
        [{ role: 'user', content: 'x' }],
      ],
      advantages: [[0.5, 0.5, 0.5, 0.5], [0.5]],
    };
    const irregular = async (kind: string) =>
      Number(
        (await shared.http.get('/metrics')).text.match(
          new RegExp(`^clotho_groups_irregular_total\\{kind="${kind}"\\} (\\d+)$`, 'm'),
        )?.[1] ?? 0,
      );
    const before = { content: await irregular('message_content_not_text'), advantages: await irregular('advantages_misaligned') };
    expect(await shared.http.post('/scored_data', odd)).toMatchObject({ status: 200, json: { status: 'received' } });
    expect(await irregular('message_content_not_text')).toBe(before.content + 1);
    expect(await irregular('advantages_misaligned')).toBe(before.advantages + 1);
    await waitFor(() => /accepted .* advantages whose rows do not match tokens/.test(shared.api.run.stderr()), 10_000, 'the warning');
    const served = (await shared.http.get('/batch')).json.batch[0];
    expect(served.messages[0][0].content).toEqual(odd.messages[0]![0]!.content);
    expect(served.advantages).toEqual(odd.advantages);

    // A Python environment appending bools as scores: pydantic takes them as 1.0 and 0.0, and so does this API.
    expect((await shared.http.post('/scored_data', { ...group(6, 2, null), scores: [true, false] })).json).toEqual({ status: 'received' });
    expect((await shared.http.get('/batch')).text).toContain('"scores":[1.0,0.0]');
    expect(await irregular('numbers_coerced')).toBeGreaterThan(0);
  });

  it("keeps the trainer's max_token_len in /info after /reset_data, as Atropos does (only batch_size goes back to -1)", async () => {
    await shared.http.get('/reset_data');
    await shared.http.post('/register', { ...TRAINER, max_token_len: 1234 });
    expect((await shared.http.get('/info')).json).toEqual({ batch_size: 4, max_token_len: 1234 });
    await shared.http.get('/reset_data');
    expect((await shared.http.get('/info')).json).toEqual({ batch_size: -1, max_token_len: 1234 });
  });
});

describe('clotho api, the waiting groups: GET /queue reads them without taking any', () => {
  type Shown = { id: string; env_id: number | null; policy_version: number | null; received_at: number; group: { tokens: number[][] } };
  const queue = async (query = '') => (await shared.http.get(`/queue${query}`)).json as { total: number; groups: Shown[] };
  const tagsOf = (groups: { tokens: number[][] }[]) => groups.map((g) => g.tokens[0]![0]!).sort((a, b) => a - b);

  it('shows queued, buffered and formed groups, not leased ones, and the trainer still gets every group', async () => {
    await shared.http.get('/reset_data');
    await shared.http.post('/register', TRAINER);
    await shared.http.get('/batch');
    const env = (await shared.http.post('/register-env', { max_token_length: 2048, desired_name: 'queue', weight: 1, group_size: 2 })).json;
    const posted = Date.now() / 1000;
    const list = [11, 12, 13, 14, 15].map((tag) => ({ ...group(tag, 2, null), idempotency_key: `queue-${tag}`, policy_version: 0 }));
    expect((await shared.http.post('/scored_data_list', list)).json).toEqual({ status: 'received', groups_processed: 5 });
    expect((await shared.http.post('/scored_data', { ...group(16, 1, env.env_id), idempotency_key: 'queue-16' })).json).toEqual({
      status: 'buffered',
      buffer_size: 1,
    });

    const all = await queue();
    expect(all.total).toBe(6);
    expect(all.groups.map((g) => g.id)).toEqual(['queue-11', 'queue-12', 'queue-13', 'queue-14', 'queue-15', 'queue-16']);
    expect(all.groups[0]).toMatchObject({ env_id: null, policy_version: 0, group: group(11, 2, null) });
    expect(all.groups[5]).toMatchObject({ env_id: env.env_id, policy_version: null });
    for (const g of all.groups) expect(g.received_at).toBeGreaterThanOrEqual(Math.floor(posted) - 1);
    expect(await queue('?offset=4&limit=1')).toMatchObject({ total: 6, groups: [{ id: 'queue-15' }] });
    expect((await shared.http.get('/queue?limit=201')).status).toBe(422);
    // Reading twice took nothing: the same six wait, and the trainer's status still counts the queued five.
    expect(await queue()).toEqual(all);
    expect((await shared.http.get('/status')).json).toEqual({ current_step: 0, queue_size: 5 });

    // The trainer takes a batch: two batches form, one is served, the other's groups still wait beside the rest.
    const shown = new Map(all.groups.map((g) => [g.group.tokens[0]![0], g.group]));
    const first = (await shared.http.get('/batch')).json.batch as { tokens: number[][] }[];
    expect(first).toHaveLength(2);
    for (const served of first) expect(served).toEqual(shown.get(served.tokens[0]![0]));
    const after = await queue();
    expect(after.total).toBe(4);
    expect(tagsOf([...first, ...after.groups.map((g) => g.group)])).toEqual([11, 12, 13, 14, 15, 16]);

    // A leased batch is with a trainer, not waiting; acked, its groups are gone for good.
    const leased = (await shared.http.get('/batch?lease_seconds=60')).json;
    for (const served of leased.batch) expect(served).toEqual(shown.get(served.tokens[0]![0]));
    const left = await queue();
    expect(left.total).toBe(2);
    expect(tagsOf([...first, ...leased.batch, ...left.groups.map((g) => g.group)])).toEqual([11, 12, 13, 14, 15, 16]);
    expect((await shared.http.post('/batch/ack', { batch_id: leased.batch_id })).json).toEqual({ status: 'success' });
    expect(await queue()).toEqual(left);
  });
});

describe('clotho api --idempotency-window 2 --max-queue-groups 4', () => {
  const small = sharedApiProcess(['--idempotency-window', '2', '--max-queue-groups', '4']);

  const counter = async (name: string) => Number((await small.http.get('/metrics')).text.match(new RegExp(`^${name} (\\d+)$`, 'm'))![1]);

  it('answers a key repeated after more keys than the batcher remembers as a duplicate, and queues it once', async () => {
    await small.http.get('/reset_data');
    await small.http.post('/register', { ...TRAINER, batch_size: 64 });
    const post = (tag: number) => small.http.post('/scored_data', { ...group(tag, 2, null), idempotency_key: `key-${tag}` });
    for (const tag of [1, 2, 3]) expect((await post(tag)).json).toEqual({ status: 'received' });
    // key-1 has left the batcher's window of 2; the API's durable record still knows it.
    expect((await post(1)).json).toEqual({ status: 'received', duplicate: true });
    const list = await small.http.post('/scored_data_list', [{ ...group(2, 2, null), idempotency_key: 'key-2' }]);
    expect(list.json).toEqual({ status: 'received', groups_processed: 1, duplicates: 1 });
    expect((await small.http.get('/status')).json.queue_size).toBe(3);
    expect(await counter('clotho_groups_received_total')).toBe(3);
  });

  it('answers posts 503 with Retry-After past the bound, counts each refusal, and takes posts again once the trainer drains', async () => {
    await small.http.get('/reset_data');
    await small.http.post('/register', TRAINER);
    const before = { posts: await counter('clotho_posts_refused_total'), groups: await counter('clotho_groups_refused_total') };
    expect(
      (
        await small.http.post(
          '/scored_data_list',
          [1, 2, 3, 4].map((tag) => group(tag, 2, null)),
        )
      ).status,
    ).toBe(200);
    const single = await fetch(`${small.api.url}/scored_data`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(group(5, 2, null)),
    });
    expect([single.status, single.headers.get('retry-after')]).toEqual([503, '1']);
    expect(await single.json()).toEqual({ detail: expect.stringContaining('--max-queue-groups') });
    expect((await small.http.post('/scored_data_list', [group(6, 2, null), group(7, 2, null)])).status).toBe(503);
    expect((await small.http.get('/status')).json.queue_size).toBe(4);
    expect(await counter('clotho_posts_refused_total')).toBe(before.posts + 2);
    expect(await counter('clotho_groups_refused_total')).toBe(before.groups + 3);

    // The trainer takes a batch (two groups): there is room again, seen within a second.
    expect(firstTokens((await small.http.get('/batch')).json.batch)).toHaveLength(2);
    let accepted: { status: number } | undefined;
    await waitFor(
      async () => (accepted = await small.http.post('/scored_data', group(9, 2, null))).status !== 503,
      10_000,
      'room in the queue',
    );
    expect(accepted?.status).toBe(200);
  });
});
