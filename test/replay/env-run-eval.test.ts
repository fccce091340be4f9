import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { Worker } from '@temporalio/worker';
import { afterEach, describe, expect, it } from 'vitest';
import gsm8k from '../../environments/gsm8k/index.js';
import { ensureTemporalCli } from '../../temporal-dev/index.js';
import { workflowBundle } from '../../src/workers/bundle.js';
import { evaluationId, registerEnvUpdate, registerTrainerUpdate, takeBatchUpdate } from '../../src/workflows/messages.js';
import { batcher } from '../../src/workflows/batcher.js';
import { envRun } from '../../src/workflows/env-run.js';
import { waitFor } from '../support/cli.js';
import { GSM8K_TEST, gsm8kResponder } from '../support/gsm8k-model.js';
import { fastSteps, startHarness, type Harness } from '../support/harness.js';
import { uniqueId } from '../support/temporal.js';
import { startedBy } from '../../src/cli/versions.js';
import { atBaseline } from './baseline.js';

/**
 * Determinism guard of evaluation during training (steps_per_eval): an env-run that started evaluation children and
 * one evaluation child, recorded at the replay baseline with CLOTHO_RECORD_HISTORIES=1, must replay against today's
 * workflow code.
 */
const HISTORIES = new URL('./histories/', import.meta.url);
const recording = process.env.CLOTHO_RECORD_HISTORIES === '1';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function historyJson(h: Harness, workflowId: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    await ensureTemporalCli(),
    [
      'workflow',
      'show',
      '--workflow-id',
      workflowId,
      '--address',
      h.temporal.address,
      '--namespace',
      h.temporal.namespace,
      '--output',
      'json',
    ],
    { maxBuffer: 64 << 20 },
  );
  return stdout;
}

describe('replay of an env-run that evaluates during training', () => {
  it.runIf(recording)(
    'records an env-run feeding a batcher with evaluations at steps 2 and 4 (STOP_TRAIN), and one evaluation',
    async () => {
      harness = await startHarness({
        environment: gsm8k,
        envConfig: { data_path: GSM8K_TEST, group_size: 4 },
        responder: gsm8kResponder((item, sample) => sample === 0 || item === 1),
      });
      const h = harness;
      const batcherHandle = await h.temporal.client.workflow.start(batcher, {
        taskQueue: h.queues.workflows,
        workflowId: uniqueId('batcher'),
        args: [{ trainer: { kind: 'http' }, options: {} }],
      });
      await batcherHandle.executeUpdate(registerTrainerUpdate, {
        args: [
          {
            wandb_group: 'g',
            wandb_project: 'p',
            batch_size: 4,
            max_token_len: 4096,
            checkpoint_dir: '',
            save_checkpoint_interval: -1,
            starting_step: 0,
            num_steps: 5,
          },
        ],
      });
      await batcherHandle.executeUpdate(takeBatchUpdate, { args: [{}] });
      await batcherHandle.executeUpdate(registerEnvUpdate, {
        args: [{ max_token_length: 4096, desired_name: 'gsm8k', weight: 1, group_size: 4, min_batch_allocation: null }],
      });
      const workflowId = uniqueId('env-run-eval');
      const run = await h.temporal.client.workflow.start(envRun, {
        taskQueue: h.queues.workflows,
        workflowId,
        ...startedBy(true),
        args: [
          {
            runId: h.runId,
            environment: 'gsm8k',
            totalGroups: 1000,
            maxInFlight: 2,
            sink: { kind: 'batcher', workflowId: batcherHandle.workflowId, envId: 0, maxBatchesOffpolicy: 1, stopAtStep: 5 },
            group: { ...h.groupInput(0, { groupSize: 4 }) },
            evaluation: {
              everySteps: 2,
              handling: 'STOP_TRAIN',
              limitRatio: 0.5,
              run: {
                runId: h.runId,
                environment: 'gsm8k',
                items: 2,
                maxTurns: 1,
                concurrency: 2,
                taskQueue: h.queues.llm,
                activity: { ...fastSteps().generate, heartbeatTimeoutMs: 60_000 },
              },
            },
          },
        ],
      });
      for (let step = 1; step <= 5; step++) {
        await waitFor(
          async () => (await batcherHandle.executeUpdate(takeBatchUpdate, { args: [{}] })).status === 'batch',
          60_000,
          `batch ${step}`,
        );
      }
      const result = await run.result();
      expect(result.evaluation?.results.map((r) => r.step)).toEqual([2, 4]);
      await batcherHandle.terminate();
      await writeFile(new URL('env-run-eval.json', HISTORIES), await historyJson(h, workflowId));
      await writeFile(new URL('evaluation.json', HISTORIES), await historyJson(h, evaluationId(h.runId, 'gsm8k', 2)));
    },
  );

  it.each([
    ['env-run-eval.json', 'envRun', 'StartChildWorkflowExecutionInitiated'],
    ['evaluation.json', 'evaluation', 'ActivityTaskScheduled'],
  ])('replays %s against the current workflow code', async (file, workflowType, command) => {
    type Event = { eventType: string; startChildWorkflowExecutionInitiatedEventAttributes?: { workflowType: { name: string } } };
    const history = JSON.parse(await readFile(new URL(file, HISTORIES), 'utf8')) as { events: Event[] };
    const started = history.events[0] as unknown as { workflowExecutionStartedEventAttributes: { workflowType: { name: string } } };
    expect(started.workflowExecutionStartedEventAttributes.workflowType.name).toBe(workflowType);
    expect(atBaseline(history), `${file} was recorded before the replay baseline: record it anew`).toBe(true);
    expect(
      history.events.some(
        (e) =>
          e.eventType
            .replace(/^EVENT_TYPE_/, '')
            .replace(/_/g, '')
            .toLowerCase() === command.toLowerCase(),
      ),
    ).toBe(true);
    if (workflowType === 'envRun') {
      const children = history.events.flatMap((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType.name ?? []);
      expect(children.filter((name) => name === 'evaluation')).toHaveLength(2);
    }
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file);
  });
});
