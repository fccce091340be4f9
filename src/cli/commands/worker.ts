import { ConfigError } from '../../config/config-error.js';
import type { CommandIo } from '../io.js';
import { planRun, withRunSession } from '../run.js';
import { METRICS_FLAGS } from '../run-metrics.js';
import { runTaskQueues } from '../runtime.js';

export const WORKER_USAGE = `Usage: clotho worker <environment> --env.run_id <id> [--env.<field> v] [--openai.<field> v]

Runs the workflow, LLM and environment workers of one environment of a run until Ctrl-C: more workers for a big
run (each environment of a run has task queues of its own, so each scales on its own hosts), or the workers of a
run whose process died (its workflows resume where they were).`;

/** `clotho worker`: serves one run's task queues until interrupted. */
export async function workerCommand(argv: string[], io: CommandIo): Promise<number> {
  const plan = await planRun(argv, { commandFlags: METRICS_FLAGS });
  for (const notice of plan.notices) io.err(`clotho worker: ${notice}`);
  if (plan.config.env.run_id === null) throw new ConfigError(['--env.run_id: required, to name the run whose workers these are']);
  return withRunSession(plan, async ({ workers, interrupted }) => {
    const config = plan.runConfig
      ? ` with the run's environment config ${plan.runConfig.record.digest.slice(0, 12)} (${plan.runConfig.how})`
      : '';
    io.out(`workers of run ${plan.runId} polling ${Object.values(runTaskQueues(plan.runId, plan.definition.name)).join(', ')}${config}`);
    await Promise.race([workers.done, interrupted]).catch((error: unknown) => io.out(`${(error as Error).message}: stopping workers`));
    return 0;
  });
}
