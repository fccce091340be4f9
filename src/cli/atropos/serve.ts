import type { AtroposEnvRunInput, AtroposEvalSchedule } from '../../schema/atropos.js';
import { SERVE_ITEM_WAIT, type StepOptions } from '../../schema/rollout.js';
import { evaluationsLine } from '../progress.js';
import { currentRun } from '../batcher.js';
import { envRunId, runToEnd } from '../commands/process.js';
import { lastStep, registerWithBatcher, SERVE_FLAGS } from '../commands/serve.js';
import type { CommandIo } from '../io.js';
import { raceWatching } from '../run.js';
import { numberOf, withAtroposSession } from './session.js';
import { batcherViewQuery } from '../../workflows/messages.js';

/** An evaluation may take long; a worker that died is noticed by its heartbeat (the collect step's), not by this. */
const EVALUATION_TIMEOUT_MS = 24 * 3600_000;
const HANDLINGS = ['STOP_TRAIN', 'LIMIT_TRAIN', 'NONE'] as const;

/** Atropos's evaluation during training: `evaluate()` every steps_per_eval trainer steps (none when ≤ 0), on the worker. */
export function atroposEvalSchedule(config: Record<string, unknown>, collect: StepOptions): AtroposEvalSchedule | undefined {
  const everySteps = numberOf(config, 'steps_per_eval', 0);
  if (everySteps <= 0) return undefined;
  const handling = HANDLINGS.find((h) => h === config.eval_handling) ?? 'STOP_TRAIN';
  const limitRatio = numberOf(config, 'eval_limit_ratio', 0.5);
  return { everySteps, handling, limitRatio, step: { ...collect, startToCloseTimeoutMs: EVALUATION_TIMEOUT_MS } };
}

/**
 * `clotho serve --atropos env.py[:Class] <Atropos's flags>`: registers the environment with the batcher behind
 * `clotho api` as Atropos's serve mode registers with its API, and runs an `atroposEnvRun` that hands every kept group
 * to the batcher by signal, stamped with the trainer's step at its start, under the batcher's backpressure, until the
 * trainer's last step.
 */
export function atroposServeCommand(argv: string[], io: CommandIo): Promise<number> {
  const flags = { 'batcher-id': SERVE_FLAGS['batcher-id'] };
  return withAtroposSession(argv, 'serve', flags, io, async (session) => {
    const { runId, environment, temporal, worker, settings, interrupted, stopped } = session;
    const { config } = worker.ready;
    const { run, workflowId: batcherId } = await currentRun(temporal.client, session.flags['batcher-id'] as string);
    if (run > 1) io.out(`feeding training run ${run} (batcher ${batcherId})`);
    const registration = {
      max_token_length: numberOf(config, 'max_token_length', 2048),
      desired_name: typeof config.wandb_name === 'string' ? config.wandb_name : environment,
      weight: numberOf(config, 'inference_weight', 1),
      group_size: settings.groupSize,
      min_batch_allocation: typeof config.min_batch_allocation === 'number' ? config.min_batch_allocation : null,
      // The same run started again (same --env.run_id) takes its env id back.
      run_key: envRunId(runId, environment),
    };
    const registered = await registerWithBatcher(temporal, batcherId, registration, io, interrupted);
    io.out(`run ${runId}: registered as ${registered.wandb_name} (env_id ${registered.env_id}) at step ${registered.starting_step}`);
    // As Atropos's environment reads /info once registered: the trainer's max_token_len, -1 when it set none.
    const { info } = await temporal.client.workflow.getHandle(batcherId).query(batcherViewQuery);
    const evaluation = atroposEvalSchedule(config, settings.steps.collect);
    if (evaluation) io.out(`evaluating every ${evaluation.everySteps} trainer steps (${evaluation.handling})`);
    const input: AtroposEnvRunInput = {
      ...settings,
      hooks: { ...settings.hooks, checkpointInterval: registered.checkpoint_interval, ...(evaluation ? { evaluation } : {}) },
      totalGroups: Number.MAX_SAFE_INTEGER,
      // A streaming environment's None is none for now: the run asks again, as Atropos's serve loop does.
      itemWait: SERVE_ITEM_WAIT,
      ...(info.max_token_len > 0 ? { maxTokenLen: info.max_token_len } : {}),
      sink: {
        kind: 'batcher',
        workflowId: batcherId,
        envId: registered.env_id,
        maxBatchesOffpolicy: numberOf(config, 'max_batches_offpolicy', 3),
        stopAtStep: lastStep(numberOf(config, 'total_steps', -1), registered.num_steps),
      },
    };
    const result = await raceWatching(
      (signal) => runToEnd(temporal, { runId, environment }, { type: 'atroposEnvRun', input }, io, signal),
      ...stopped,
    );
    const evaluations = result.evaluation ? `; ${evaluationsLine(result.evaluation)}` : '';
    io.out(`delivered ${result.delivered} groups; failed ${result.failed}${evaluations}`);
    return result.failed > 0 ? 1 : 0;
  });
}
