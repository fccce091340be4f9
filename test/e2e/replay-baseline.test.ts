import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTaskQueues } from '../../src/cli/runtime.js';
import { CLOTHO_VERSION, REPLAY_BASELINE } from '../../src/version.js';
import { BATCHER_TASK_QUEUE } from '../../src/workers/workers.js';
import { runClotho } from '../support/cli.js';
import { GSM8K_TEST, gsm8kResponder } from '../support/gsm8k-model.js';
import { temporalEnv as env, useScratch } from '../support/runs.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { testConnection, uniqueId } from '../support/temporal.js';

/**
 * The replay baseline (ARCHITECTURE.md, "Replay and patches"): a run started by a Clotho older than REPLAY_BASELINE
 * (or before versions were recorded) is refused with the version that can finish it, before any worker of this version
 * polls its task queues, so it never meets a nondeterminism error. `clotho runs` lists open runs with their versions.
 * The old runs are made by hand: workflows of the old kind whose memo says 0.1.0, or nothing.
 */
const scratch = useScratch('clotho-replay-baseline-');
let model: ScriptedOpenAI;
beforeAll(async () => {
  model = await startScriptedOpenAI({ responder: gsm8kResponder(() => true) });
});
afterAll(() => model.close());

/** Starts an env-run of run `runId` as an older Clotho did: no worker runs it; its memo says `version`, or nothing. */
async function startOldEnvRun(runId: string, version?: string): Promise<string> {
  const { client } = await testConnection();
  const workflowId = `clotho/${runId}/gsm8k`;
  await client.workflow.start('envRun', {
    workflowId,
    taskQueue: runTaskQueues(runId, 'gsm8k').workflows,
    args: [{ runId, environment: 'gsm8k' }],
    ...(version ? { memo: { clothoVersion: version } } : {}),
  });
  return workflowId;
}

/** Workflow tasks any worker took on the workflow: none for a refused run. */
async function workflowTasksTaken(workflowId: string): Promise<number> {
  const { client } = await testConnection();
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowTaskStartedEventAttributes).length;
}

const runArgs = (command: string, runId: string) => [
  command,
  'gsm8k',
  '--env.run_id',
  runId,
  '--env.data_path',
  GSM8K_TEST,
  '--env.total_steps',
  '2',
  '--openai.base_url',
  model.baseUrl,
  '--store',
  scratch.path('store'),
  '--env.data_path_to_save_groups',
  scratch.path(`${runId}.jsonl`),
];

describe('runs older than the replay baseline', () => {
  it('clotho process, worker and serve refuse an env-run started by Clotho 0.1.0, naming the version that finishes it', async () => {
    const runId = uniqueId('old-010');
    const workflowId = await startOldEnvRun(runId, '0.1.0');
    for (const command of ['process', 'worker', 'serve']) {
      const args = runArgs(command, runId).filter(
        (_, i, all) =>
          command !== 'serve' || (all[i] !== '--env.data_path_to_save_groups' && all[i - 1] !== '--env.data_path_to_save_groups'),
      );
      const { code, stderr } = await runClotho(args, env());
      expect(code, `${command}: ${stderr}`).toBe(2);
      expect(stderr).toContain(
        `clotho ${command}: run ${runId} (workflow ${workflowId}) was started by Clotho 0.1.0, older than the replay baseline of Clotho ${CLOTHO_VERSION} (${REPLAY_BASELINE}): ` +
          'this version cannot replay it. Finish it with Clotho 0.1.0 (npm install clotho@0.1.0) or start a new run',
      );
      expect(stderr).not.toMatch(/nondetermin/i);
    }
    expect(await workflowTasksTaken(workflowId)).toBe(0);
  });

  it('refuses an env-run that recorded no version (started before versions were recorded)', async () => {
    const runId = uniqueId('old-none');
    const workflowId = await startOldEnvRun(runId);
    const { code, stderr } = await runClotho(runArgs('worker', runId), env());
    expect(code).toBe(2);
    expect(stderr).toContain(`run ${runId} (workflow ${workflowId}) was started before Clotho recorded versions (Clotho 0.1.0 or older)`);
    expect(stderr).toContain('Finish it with Clotho 0.1.0 (npm install clotho@0.1.0) or start a new run');
    expect(await workflowTasksTaken(workflowId)).toBe(0);
  });

  it('clotho api refuses a batcher started before versions, before its worker starts', async () => {
    const { client } = await testConnection();
    const batcherId = uniqueId('old-batcher');
    await client.workflow.start('batcher', { workflowId: batcherId, taskQueue: BATCHER_TASK_QUEUE, args: [{ trainer: { kind: 'http' } }] });
    const { code, stderr } = await runClotho(['api', '--port', '0', '--batcher-id', batcherId, '--store', scratch.path('store')], env());
    expect(code).toBe(2);
    expect(stderr).toContain(
      `clotho api: training run 1 of batcher ${batcherId} (workflow ${batcherId}) was started before Clotho recorded versions`,
    );
    expect(stderr).toContain('Finish it with Clotho 0.1.0 (npm install clotho@0.1.0) or start a new training run (clotho api --new-run)');
    // No count of its workflow tasks: batchers share one task queue, which other test files' APIs may serve meanwhile.
    await client.workflow.getHandle(batcherId).terminate('test over');
  });

  it('clotho runs lists open runs with the version that started each, and whether this version finishes it', async () => {
    const oldRun = uniqueId('listed-old');
    await startOldEnvRun(oldRun, '0.1.0');
    const unversioned = uniqueId('listed-none');
    await startOldEnvRun(unversioned);
    // A run of this version: clotho process records its version (memo and ClothoVersion) on the env-run.
    const current = uniqueId('listed-new');
    const { client } = await testConnection();
    const processed = await runClotho(runArgs('process', current), env());
    expect(processed.code, processed.stderr).toBe(0);
    const description = await client.workflow.getHandle(`clotho/${current}/gsm8k`).describe();
    expect(description.memo?.clothoVersion).toBe(CLOTHO_VERSION);
    expect(description.searchAttributes.ClothoVersion).toEqual([CLOTHO_VERSION]);
    // Its groups carry the run's version too.
    const group = await client.workflow.getHandle(`clotho/${current}/gsm8k/item-0`).describe();
    expect(group.memo?.clothoVersion).toBe(CLOTHO_VERSION);
    expect(group.searchAttributes.ClothoVersion).toEqual([CLOTHO_VERSION]);

    const table = await runClotho(['runs'], env());
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain(`Clotho ${CLOTHO_VERSION} finishes runs started by Clotho ${REPLAY_BASELINE} or later`);
    expect(table.stdout).toMatch(/RUN\s+ENVIRONMENT\s+KIND\s+STATUS\s+STARTED\s+CLOTHO\s+CAN FINISH/);
    expect(table.stdout).toMatch(
      new RegExp(`${oldRun}\\s+gsm8k\\s+env-run\\s+running\\s+\\S+ \\S+\\s+0\\.1\\.0\\s+no: finish with 0\\.1\\.0`),
    );
    expect(table.stdout).toMatch(new RegExp(`${unversioned}\\s+gsm8k\\s+env-run\\s+running\\s+\\S+ \\S+\\s+none \\(≤ 0\\.1\\.0\\)\\s+no`));
    // Finished runs are not open.
    expect(table.stdout).not.toContain(current);

    // Visibility is eventually consistent: the JSON listing is read once more after the table.
    const json = await runClotho(['runs', '--json'], env());
    const runs = json.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(runs.find((r) => r.runId === oldRun)).toMatchObject({
      kind: 'env-run',
      environment: 'gsm8k',
      clothoVersion: '0.1.0',
      canFinish: false,
      finishWith: '0.1.0',
    });
    expect(runs.find((r) => r.runId === unversioned)).toMatchObject({ clothoVersion: null, canFinish: false, finishWith: '0.1.0' });
    for (const id of [oldRun, unversioned]) await client.workflow.getHandle(`clotho/${id}/gsm8k`).terminate('test over');
  });
});
