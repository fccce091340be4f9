import { ConfigError } from '../../config/config-error.js';
import type { VerifiersEnvRunInput } from '../../schema/verifiers.js';
import { currentRun } from '../batcher.js';
import { envRunId, runToEnd } from '../commands/process.js';
import { lastStep, registerWithBatcher, SERVE_FLAGS } from '../commands/serve.js';
import type { CommandIo } from '../io.js';
import { raceWatching } from '../run.js';
import { withVerifiersSession } from './session.js';

/** Groups waiting in the batcher for at most this many batches (Atropos's max_batches_offpolicy default). */
const MAX_BATCHES_OFFPOLICY = 3;

/**
 * `clotho serve --verifiers <env> <verifiers' flags>`: registers the environment with the batcher behind `clotho api`,
 * and runs a `verifiersEnvRun` over its tasks, epoch after epoch, that hands every scored group to the batcher by
 * signal, stamped with the policy that generated it, under the batcher's backpressure, until the trainer's last step.
 * Training needs exact tokens: the policy's tokenizer (`--openai.tokenizer_name`, or the embedded engine).
 */
export function verifiersServeCommand(argv: string[], io: CommandIo): Promise<number> {
  const flags = { 'batcher-id': SERVE_FLAGS['batcher-id'] };
  return withVerifiersSession(argv, 'serve', flags, io, async (session) => {
    const { runId, environment, temporal, worker, inference, settings, interrupted, stopped } = session;
    if (!inference.continuation) {
      throw new ConfigError([
        "--openai.tokenizer_name: serve trains on exact tokens; name the policy's tokenizer (a messages-only run is for process and evaluate)",
      ]);
    }
    const { run, workflowId: batcherId } = await currentRun(temporal.client, session.flags['batcher-id'] as string);
    if (run > 1) io.out(`feeding training run ${run} (batcher ${batcherId})`);
    const { ready } = worker;
    const registration = {
      max_token_length: typeof ready.sampling.max_tokens === 'number' ? ready.sampling.max_tokens : 2048,
      desired_name: environment,
      weight: 1,
      group_size: settings.groupSize,
      min_batch_allocation: null,
      // The same run started again (same --env.run_id) takes its env id back.
      run_key: envRunId(runId, environment),
    };
    const registered = await registerWithBatcher(temporal, batcherId, registration, io, interrupted);
    io.out(`run ${runId}: registered as ${registered.wandb_name} (env_id ${registered.env_id}) at step ${registered.starting_step}`);
    io.out(`model: ${inference.describe}`);
    const input: VerifiersEnvRunInput = {
      ...settings,
      totalGroups: Number.MAX_SAFE_INTEGER,
      cycle: true,
      sink: {
        kind: 'batcher',
        workflowId: batcherId,
        envId: registered.env_id,
        maxBatchesOffpolicy: MAX_BATCHES_OFFPOLICY,
        stopAtStep: lastStep(-1, registered.num_steps),
      },
    };
    const result = await raceWatching(
      (signal) => runToEnd(temporal, { runId, environment }, { type: 'verifiersEnvRun', input }, io, signal),
      ...stopped,
    );
    io.out(`delivered ${result.delivered} groups; failed ${result.failed}`);
    return result.failed > 0 ? 1 : 0;
  });
}
