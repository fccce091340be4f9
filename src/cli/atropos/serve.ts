import type { AtroposEnvRunInput } from '../../schema/atropos.js';
import { currentRun } from '../batcher.js';
import { envRunId, runToEnd } from '../commands/process.js';
import { lastStep, registerWithBatcher, SERVE_FLAGS } from '../commands/serve.js';
import type { CommandIo } from '../io.js';
import { raceWatching } from '../run.js';
import { withAtroposSession } from './session.js';

/** A number field of Atropos's config, or `fallback` where the class has none. */
const numberOf = (config: Record<string, unknown>, field: string, fallback: number) =>
  typeof config[field] === 'number' ? config[field] : fallback;

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
    const input: AtroposEnvRunInput = {
      ...settings,
      totalGroups: Number.MAX_SAFE_INTEGER,
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
    io.out(`delivered ${result.delivered} groups; failed ${result.failed}`);
    return result.failed > 0 ? 1 : 0;
  });
}
