import { ConfigError } from '../../config/config-error.js';
import type { VerifiersEnvRunInput, VerifiersReady } from '../../schema/verifiers.js';
import { jsonlPath, reportProcessed, runToEnd } from '../commands/process.js';
import type { CommandIo } from '../io.js';
import { raceWatching } from '../run.js';
import { withVerifiersSession } from './session.js';

/** The groups of a `process` or `evaluate` run: one per task of the run's view, which must end (`-n` bounds it). */
export function viewSize(ready: VerifiersReady): number {
  if (!ready.bounded || ready.tasks === null) {
    throw new ConfigError([`${ready.tasksetId}: the taskset is infinite; bound the run with -n (as vf-eval asks)`]);
  }
  if (ready.tasks === 0) throw new ConfigError([`${ready.tasksetId}: the run's view of the taskset (--select.*, -n) has no task`]);
  return ready.tasks;
}

/**
 * `clotho process --verifiers <env> <verifiers' flags>`: one group of `-r` episodes per task of the run's view (as
 * `vf-eval` takes them), driven by a `verifiersEnvRun` workflow and written to JSONL and HTML as `clotho process`
 * writes Clotho's own.
 */
export function verifiersProcessCommand(argv: string[], io: CommandIo): Promise<number> {
  return withVerifiersSession(
    argv,
    'process',
    {},
    io,
    async ({ runId, environment, resumed, output, temporal, worker, inference, settings, stopped }) => {
      const { ready } = worker;
      const totalGroups = viewSize(ready);
      const path = jsonlPath(output ?? `data/${environment}.jsonl`, resumed);
      const input: VerifiersEnvRunInput = { ...settings, totalGroups, sink: { kind: 'jsonl', path } };
      io.out(`run ${runId}: ${totalGroups} groups of ${ready.groupSize} episodes of ${ready.envId} (verifiers) → ${path}`);
      io.out(`model: ${inference.describe}`);
      const result = await raceWatching(
        (signal) => runToEnd(temporal, { runId, environment }, { type: 'verifiersEnvRun', input }, io, signal),
        ...stopped,
      );
      return reportProcessed(result, totalGroups, path, `${environment} · ${runId}`, io);
    },
  );
}
