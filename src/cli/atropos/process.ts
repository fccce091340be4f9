import { ConfigError } from '../../config/config-error.js';
import type { AtroposEnvRunInput } from '../../schema/atropos.js';
import { jsonlPath, reportProcessed, runToEnd } from '../commands/process.js';
import type { CommandIo } from '../io.js';
import { raceWatching } from '../run.js';
import { withAtroposSession } from './session.js';

/**
 * `clotho process --atropos env.py[:Class] <Atropos's flags>`: total_steps groups of an Atropos environment, driven by
 * an `atroposEnvRun` workflow and written to JSONL and HTML as `clotho process` writes Clotho's own.
 */
export function atroposProcessCommand(argv: string[], io: CommandIo): Promise<number> {
  return withAtroposSession(argv, 'process', {}, io, async ({ runId, environment, resumed, temporal, worker, settings, stopped }) => {
    const { config } = worker.ready;
    const requested = typeof config.data_path_to_save_groups === 'string' ? config.data_path_to_save_groups : `data/${environment}.jsonl`;
    const path = jsonlPath(requested, resumed);
    const totalGroups = typeof config.total_steps === 'number' ? config.total_steps : 0;
    if (totalGroups <= 0) throw new ConfigError([`--env.total_steps: expected a positive number of groups to process, got ${totalGroups}`]);
    const input: AtroposEnvRunInput = { ...settings, totalGroups, sink: { kind: 'jsonl', path } };
    io.out(`run ${runId}: ${totalGroups} groups of ${worker.ready.className} (Atropos) → ${path}`);
    const result = await raceWatching(
      (signal) => runToEnd(temporal, { runId, environment }, { type: 'atroposEnvRun', input }, io, signal),
      ...stopped,
    );
    return reportProcessed(result, totalGroups, path, `${environment} · ${runId}`, io);
  });
}
