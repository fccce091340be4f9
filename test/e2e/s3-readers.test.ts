import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { runClotho, startClothoView, type CliRun } from '../support/cli.js';
import { gsm8kResponder, gsm8kCommand } from '../support/gsm8k-model.js';
import { ensureS3ServerBinary, startS3Server, type S3Server } from '../support/s3-server.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

/**
 * The commands that read a finished run (`clotho view`, `clotho inspect`, `sft-gen`/`dpo-gen --run`) open the store
 * the run used, an s3:// URL as well as a directory: a `clotho process` run into a bucket of a real S3 server is read
 * back by each of them, through the AWS variables, as a user on another host would.
 */

const binary = await ensureS3ServerBinary();
if (binary.status === 'unreachable') console.warn(`S3 reader tests skipped: ${binary.message}`);

const GROUPS = 3;

let dir: string | undefined;
let server: S3Server | undefined;
let model: ScriptedOpenAI | undefined;
const children: CliRun[] = [];
afterAll(async () => {
  for (const child of children) if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGKILL');
  await model?.close();
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const lines = async (path: string) => (await readFile(path, 'utf8')).split('\n').filter((l) => l.trim() !== '');

/** Starts `clotho view` and waits for the address it listens on. */
/** `clotho view` of the bucket's runs, with no Temporal and no tokenizer. */
const startView = (args: string[], env: Record<string, string>) =>
  startClothoView([...args, '--no-temporal', '--tokenizer', 'none'], env, children);

const getJson = async (url: string) => (await fetch(url)).json() as Promise<any>;

describe.skipIf(binary.status !== 'ready')('reading a run from an S3 store', () => {
  it('clotho view, clotho inspect and sft-gen/dpo-gen --run open the s3:// store the run used', async () => {
    dir = await mkdtemp(join(tmpdir(), 'clotho-s3-readers-'));
    server = await startS3Server((binary as { path: string }).path);
    await server.createBucket('clotho');
    const store = `s3://clotho/${uniqueId('readers')}`;
    // Sample 0 right, sample 1 wrong: every group scored and kept.
    model = await startScriptedOpenAI({ responder: gsm8kResponder((_item, sample) => sample === 0) });
    const runId = uniqueId('s3-run');
    const saved = join(dir, `${runId}.jsonl`);
    const env = { ...server.env, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') };
    const processed = await runClotho(
      gsm8kCommand('process', model.baseUrl, {
        'env.total_steps': String(GROUPS),
        'env.group_size': 2,
        'env.run_id': runId,
        store,
        'env.data_path_to_save_groups': saved,
      }),
      env,
    );
    expect(processed.code, processed.stderr).toBe(0);
    expect(await lines(saved)).toHaveLength(GROUPS);
    // The run's groups and the config it carries are in the bucket, and nowhere on this host.
    const inBucket = new Set<string>();
    for await (const { key } of server.store(store).list(runId)) inBucket.add(key.split('/').slice(0, 3).join('/'));
    expect([...inBucket].sort()).toEqual([
      ...Array.from({ length: GROUPS }, (_, i) => `${runId}/gsm8k/item-${i}`),
      `${runId}/gsm8k/run-config`,
    ]);

    // sft-gen and dpo-gen --run: the same records as from the run's JSONL.
    const fromStore = join(dir, 'sft-store.jsonl');
    const fromFile = join(dir, 'sft-file.jsonl');
    const sft = await runClotho(['sft-gen', fromStore, '--run', runId, '--store', store], env);
    expect(sft.code, sft.stderr).toBe(0);
    expect((await runClotho(['sft-gen', fromFile, '--from', saved], env)).code).toBe(0);
    expect((await lines(fromStore)).sort()).toEqual((await lines(fromFile)).sort());
    expect(await lines(fromStore)).toHaveLength(GROUPS);
    const pairs = join(dir, 'dpo-store.jsonl');
    const dpo = await runClotho(['dpo-gen', pairs, '--run', runId, '--store', store, '--seed', '1'], env);
    expect(dpo.code, dpo.stderr).toBe(0);
    expect(await lines(pairs)).toHaveLength(GROUPS);
    // A run the bucket does not hold is named, with the store.
    const missing = await runClotho(['sft-gen', join(dir, 'none.jsonl'), '--run', 'no-such-run', '--store', store], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`--run no-such-run: no such run in the trajectory store ${store}`);

    // inspect: the timeline from Temporal, then each sample from the bucket.
    const inspected = await runClotho(['inspect', runId, '1', '--store', store], env);
    expect(inspected.code, inspected.stderr).toBe(0);
    expect(inspected.stdout).toContain(`group ${runId}/gsm8k/item-1/group (2 sequences):`);
    expect(inspected.stdout).not.toContain('not in the trajectory store');

    // view: the run by id, every run of the bucket when none is named, and the JSONL's lines placed in the bucket.
    const byRun = await startView(['--run', runId, '--store', store], env);
    const groups = await getJson(`${byRun}api/groups?run=${runId}`);
    expect(groups.run.origin).toBe(`${store} · run ${runId}`);
    expect(groups.total).toEqual({ groups: GROUPS, rollouts: GROUPS * 2 });
    expect(groups.statuses.scored).toBe(GROUPS);
    expect(groups.notices).toEqual([]);
    const first = groups.groups.find((g: { id: string }) => g.id === 'gsm8k/item-0');
    const rollout = await getJson(`${byRun}api/rollout?run=${runId}&group=gsm8k/item-0&sample=0`);
    expect(rollout.group.scores).toEqual(first.scores);
    const everyRun = await startView(['--store', store], env);
    expect((await getJson(`${everyRun}api/runs`)).runs.map((r: { id: string }) => r.id)).toEqual([runId]);
    const file = await startView([saved, '--store', store], env);
    const placed = await getJson(`${file}api/groups?run=${runId}.jsonl`);
    expect(placed.notices).toEqual([]);
    expect(placed.groups.map((g: { runId: string | null }) => g.runId)).toEqual(Array(GROUPS).fill(runId));
  }, 300_000);
});
