import type { CommandIo } from '../io.js';
import { withVerifiersSession } from './session.js';

/**
 * `clotho worker --verifiers <env> --env.run_id <id> <verifiers' flags>`: more workers for a verifiers run (or the
 * workers of a run whose command died) until Ctrl-C: the session host, the Python worker, built with the run's flags (a
 * config other than the run's is refused), and the workflow worker, on the run's queues.
 */
export function verifiersWorkerCommand(argv: string[], io: CommandIo): Promise<number> {
  return withVerifiersSession(argv, 'worker', {}, io, async ({ runId, settings, record, stopped }) => {
    const queues = Object.values(settings.taskQueues).join(', ');
    io.out(`workers of run ${runId} polling ${queues} with the run's environment config ${record.digest.slice(0, 12)}`);
    await Promise.race(stopped).catch((error: unknown) => io.out(`${(error as Error).message}: stopping workers`));
    return 0;
  });
}
