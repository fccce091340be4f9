import type { CommandIo } from '../io.js';
import { interruption } from '../interrupt.js';
import { planRun, startRunWorkers } from '../run.js';
import { openInference } from '../inference-setup.js';
import { openTemporal, runTaskQueues } from '../runtime.js';

export const WORKER_USAGE = `Usage: clotho worker <environment> --env.run_id <id> [--env.<field> v] [--openai.<field> v]

Runs the workflow, LLM and environment workers of one run until Ctrl-C: more workers for a big run, or the
workers of a run whose process died (its workflows resume where they were).`;

/** `clotho worker`: serves one run's task queues until interrupted. */
export async function workerCommand(argv: string[], io: CommandIo): Promise<number> {
  const plan = await planRun(argv);
  if (plan.config.env.run_id === null) throw new Error('--env.run_id: required, to name the run whose workers these are');
  const inference = await openInference(plan, (plan.config.rest.flags as { model: string }).model);
  const temporal = await openTemporal().catch(async (error: unknown) => {
    await inference.close();
    throw error;
  });
  const stop = interruption();
  try {
    const { workers } = await startRunWorkers(plan, temporal, inference);
    io.out(`workers of run ${plan.runId} polling ${Object.values(runTaskQueues(plan.runId)).join(', ')}`);
    try {
      await Promise.race([workers.done, stop.promise]);
    } catch (error) {
      io.out(`${(error as Error).message}: stopping workers`);
    } finally {
      await workers.shutdown();
    }
    return 0;
  } finally {
    stop.dispose();
    await temporal.close();
    await inference.close();
  }
}
