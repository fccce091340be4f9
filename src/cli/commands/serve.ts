import { z } from 'zod';
import { ConfigError } from '../../config/config-error.js';
import type { EnvRegistration } from '../../schema/api.js';
import type { EnvRunInput, EnvRunResult } from '../../schema/rollout.js';
import type { batcher } from '../../workflows/batcher.js';
import type { envRun } from '../../workflows/env-run.js';
import { registerEnvUpdate, WORKFLOW_TASK_TIMEOUT_MS } from '../../workflows/messages.js';
import { currentRun, DEFAULT_BATCHER_ID } from '../batcher.js';
import { evalSchedule } from '../eval-schedule.js';
import type { CommandIo } from '../io.js';
import { envRunSettings, planRun, raceWatching, withRunSession } from '../run.js';
import { METRICS_FLAGS } from '../run-metrics.js';
import { runTaskQueues, type TemporalRuntime } from '../runtime.js';
import { rolloutsUiUrl } from '../ui.js';
import { startedBy } from '../versions.js';
import { outageNote } from '../outage.js';
import { evaluationsLine, watchProgress } from '../progress.js';
import { SLOW_POLICY } from '../slow-collects.js';
import { withWandbLogging } from '../wandb/wandb-logging.js';
import { envRunId } from './process.js';

export const SERVE_USAGE = `Usage: clotho serve <environment> [--batcher-id id] [--env.<field> v] [--openai.<field> v]

Feeds the trainer of a running \`clotho api\`, as an Atropos environment in serve mode: registers with the
batcher, keeps at most max_batches_offpolicy batches of its groups waiting, and hands every finished group
to the batcher directly (a Temporal signal, no HTTP). Stops at the trainer's last step or on Ctrl-C.`;

export const SERVE_FLAGS = {
  ...METRICS_FLAGS,
  'batcher-id': z
    .string()
    .min(1)
    .default(DEFAULT_BATCHER_ID)
    .describe('workflow id of the batcher behind `clotho api` (its newest training run is fed: `<id>/run-<n>` after a new run)'),
};

/** The step a serving run stops at: the trainer's last step, or total_steps when that comes first (-1: the trainer's). */
export function lastStep(totalSteps: number, trainerSteps: number): number {
  return Math.min(totalSteps > 0 ? totalSteps : Number.MAX_SAFE_INTEGER, trainerSteps > 0 ? trainerSteps : Number.MAX_SAFE_INTEGER);
}

/** Registers the environment with the batcher, waiting while the trainer has not started (Atropos's rule). */
export async function registerWithBatcher(
  temporal: TemporalRuntime,
  batcherId: string,
  registration: EnvRegistration,
  io: CommandIo,
  stop: Promise<never>,
) {
  const handle = temporal.client.workflow.getHandle<typeof batcher>(batcherId);
  let told = false;
  for (;;) {
    const answer = await Promise.race([handle.executeUpdate(registerEnvUpdate, { args: [registration] }), stop]);
    if (answer.status === 'success') return answer;
    if (!told) io.out('waiting for the trainer to start (its first GET /batch)');
    told = true;
    await Promise.race([new Promise((resolve) => setTimeout(resolve, 2_000)), stop]);
  }
}

/** `clotho serve`: runs an environment's rollouts into the batcher until the trainer's last step. */
export async function serveCommand(argv: string[], io: CommandIo): Promise<number> {
  const plan = await planRun(argv, { commandFlags: SERVE_FLAGS });
  for (const notice of plan.notices) io.err(`clotho serve: ${notice}`);
  const baseBatcherId = (plan.config.rest.flags as unknown as { 'batcher-id': string })['batcher-id'];
  const env = plan.config.env;
  if (env.messages_only) {
    throw new ConfigError([
      '--env.messages_only: clotho serve feeds a trainer, and a trainer needs token ids, masks and logprobs; a ' +
        'messages-only run is for evaluation or SFT data: run it with clotho process',
    ]);
  }
  return withRunSession(plan, async ({ temporal, workers, interrupted, metrics, inference }) => {
    // The trainer's newest training run: a trainer that registered new settings moved clotho api onto a fresh batcher.
    const { run, workflowId: batcherId } = await currentRun(temporal.client, baseBatcherId);
    if (run > 1) io.out(`feeding training run ${run} (batcher ${batcherId})`);
    const registration = {
      max_token_length: env.max_token_length,
      desired_name: env.wandb_name ?? plan.definition.name,
      weight: env.inference_weight,
      group_size: env.group_size,
      min_batch_allocation: env.min_batch_allocation,
      // The same run started again (same --env.run_id) takes its env id back.
      run_key: envRunId(plan.runId, plan.definition.name),
    };
    const schedule = evalSchedule(plan);
    const registered = await registerWithBatcher(temporal, batcherId, registration, io, interrupted);
    io.out(`run ${plan.runId}: registered as ${registered.wandb_name} (env_id ${registered.env_id}) at step ${registered.starting_step}`);
    const input: EnvRunInput = {
      ...envRunSettings(plan, temporal.searchAttributes),
      totalGroups: Number.MAX_SAFE_INTEGER,
      sink: {
        kind: 'batcher',
        workflowId: batcherId,
        envId: registered.env_id,
        maxBatchesOffpolicy: env.max_batches_offpolicy,
        stopAtStep: lastStep(env.total_steps, registered.num_steps),
      },
      ...(schedule ? { evaluation: schedule } : {}),
    };
    if (schedule)
      io.out(
        `evaluating ${schedule.run.items} items every ${schedule.everySteps} trainer steps (${schedule.handling}${schedule.handling === 'LIMIT_TRAIN' ? ` ${schedule.limitRatio}` : ''})`,
      );
    const ui = rolloutsUiUrl(temporal.endpoint, plan.runId);
    if (ui) io.out(`Temporal UI: ${ui}`);
    const handle = await temporal.client.workflow.start<typeof envRun>('envRun', {
      workflowId: envRunId(plan.runId, plan.definition.name),
      taskQueue: runTaskQueues(plan.runId, plan.definition.name).workflows,
      args: [input],
      ...startedBy(temporal.searchAttributes),
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT_MS,
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    const stopped = workers.done.then(() => Promise.reject(new Error('the workers stopped')));
    const outage = (groupsInFlight: number) => outageNote(inference.policy.status(), groupsInFlight);
    const watch = (signal: AbortSignal) => watchProgress(handle, io, temporal.connection, signal, SLOW_POLICY, outage);
    // W&B logs at the trainer's steps, under the name the trainer gave this environment (Atropos's serve mode).
    const cadence = { kind: 'serve', batcherId, registeredName: registered.wandb_name, startingStep: registered.starting_step } as const;
    const result: EnvRunResult = await withWandbLogging(
      {
        plan,
        temporal,
        metrics,
        envRunId: envRunId(plan.runId, plan.definition.name),
        cadence,
        notice: (line) => io.err(`clotho serve: ${line}`),
      },
      () => raceWatching(watch, stopped, interrupted),
      (r) => (r.failed > 0 ? 1 : 0),
    );
    io.out(
      `delivered ${result.delivered} groups; failed ${result.failed}${result.evaluation ? `; ${evaluationsLine(result.evaluation)}` : ''}`,
    );
    return result.failed > 0 ? 1 : 0;
  });
}
