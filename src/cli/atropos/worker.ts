import type { CommandIo } from '../io.js';
import { withAtroposSession } from './session.js';
import { AtroposWorkerGaveUp } from './supervisor.js';

/**
 * `clotho worker --atropos env.py[:Class] serve|process --env.run_id <id> <Atropos's flags>`: more workers for an
 * Atropos run (or the workers of a run whose command died) until Ctrl-C: the Python worker, built with the run's
 * flags (a config other than the run's is refused) and restarted when it dies (`--worker-restarts`), and the workflow
 * worker, on the run's queues.
 */
export function atroposWorkerCommand(argv: string[], io: CommandIo): Promise<number> {
  return withAtroposSession(argv, 'worker', {}, io, async ({ runId, settings, record, stopped }) => {
    const queues = Object.values(settings.taskQueues).join(', ');
    io.out(`workers of run ${runId} polling ${queues} with the run's environment config ${record.digest.slice(0, 12)}`);
    return Promise.race(stopped).catch((error: unknown) => {
      // Past its restarts, the Python worker is gone for good: an error, with the command that resumes the run.
      if (error instanceof AtroposWorkerGaveUp) {
        io.err(`clotho worker: ${error.message}`);
        return 1;
      }
      io.out(`${(error as Error).message}: stopping workers`);
      return 0;
    });
  });
}
