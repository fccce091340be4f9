import { ConfigError } from '../../config/config-error.js';
import type { AtroposEnvRunInput } from '../../schema/atropos.js';
import { jsonlPath, REBUILD_OUTPUT_FLAGS, reportProcessed, resumedOutput, runToEnd } from '../commands/process.js';
import type { CommandIo } from '../io.js';
import { OutputChanged, reportOutputChanged } from '../jsonl-output.js';
import { raceWatching } from '../run.js';
import { withAtroposSession, type BeforeWorkflows } from './session.js';

/**
 * `clotho process --atropos env.py[:Class] <Atropos's flags>`: total_steps groups of an Atropos environment, driven by
 * an `atroposEnvRun` workflow and written to JSONL and HTML as `clotho process` writes Clotho's own. A resumed run
 * writes on to the file it started (Atropos's CLI would pick a new `_1` beside it), checked or rebuilt first.
 */
export function atroposProcessCommand(argv: string[], io: CommandIo): Promise<number> {
  let resumedPath: string | undefined;
  const settleOutput: BeforeWorkflows = async ({ runId, environment, resumed, flags, temporal, store }) => {
    const rebuildOutput = flags['rebuild-output'] === true;
    resumedPath = await resumedOutput(temporal, store, { runId, environment, resumed, rebuildOutput }, io);
  };
  return withAtroposSession(
    argv,
    'process',
    REBUILD_OUTPUT_FLAGS,
    io,
    async ({ runId, environment, resumed, temporal, worker, settings, stopped }) => {
      const { config } = worker.ready;
      const requested = typeof config.data_path_to_save_groups === 'string' ? config.data_path_to_save_groups : `data/${environment}.jsonl`;
      const path = resumedPath ?? jsonlPath(requested, resumed);
      const totalGroups = typeof config.total_steps === 'number' ? config.total_steps : 0;
      if (totalGroups <= 0)
        throw new ConfigError([`--env.total_steps: expected a positive number of groups to process, got ${totalGroups}`]);
      const input: AtroposEnvRunInput = { ...settings, totalGroups, sink: { kind: 'jsonl', path } };
      io.out(`run ${runId}: ${totalGroups} groups of ${worker.ready.className} (Atropos) → ${path}`);
      let result;
      try {
        result = await raceWatching(
          (signal) => runToEnd(temporal, { runId, environment }, { type: 'atroposEnvRun', input }, io, signal),
          ...stopped,
        );
      } catch (error) {
        if (error instanceof OutputChanged) return reportOutputChanged(error, 'process', argv, runId, io);
        throw error;
      }
      return reportProcessed(result, totalGroups, path, `${environment} · ${runId}`, io);
    },
    settleOutput,
  );
}
