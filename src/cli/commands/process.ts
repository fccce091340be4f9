import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../../config/config-error.js';
import type { CommandOptions } from '../../config/resolve-run.js';
import type { EnvRunInput, EnvRunResult } from '../../schema/rollout.js';
import type { atroposEnvRun } from '../../workflows/atropos-env-run.js';
import type { envRun } from '../../workflows/env-run.js';
import type { verifiersEnvRun } from '../../workflows/verifiers-env-run.js';
import type { CommandIo } from '../io.js';
import { outageNote } from '../outage.js';
import { progressLine, watchProgress } from '../progress.js';
import { SLOW_POLICY } from '../slow-collects.js';
import { writeGroupsHtml } from '../report-html.js';
import { processEvalNotices } from '../eval-schedule.js';
import { envRunSettings, planRun, raceWatching, withRunSession } from '../run.js';
import { METRICS_FLAGS } from '../run-metrics.js';
import { runTaskQueues, type TemporalRuntime } from '../runtime.js';
import { rolloutsUiUrl } from '../ui.js';
import { startedBy } from '../versions.js';
import { withWandbLogging } from '../wandb/wandb-logging.js';
import { WORKFLOW_TASK_TIMEOUT_MS } from '../../workflows/messages.js';
import type { TrajectoryStore } from '../../store/trajectory-store.js';
import { OutputChanged, reportOutputChanged, settleRunOutput } from '../jsonl-output.js';

export const PROCESS_USAGE = `Usage: clotho process <environment> [--env.<field> v] [--openai.<field> v] [--config file.yaml]

Runs total_steps rollout groups of an environment and writes them, Atropos-shaped, to
--env.data_path_to_save_groups (default data/<environment>.jsonl) with an HTML page beside it.
The same command with --env.run_id <run> resumes a run, writing on to the file it started; if that file was changed
or deleted, --rebuild-output writes it again from the trajectory store first.
With --atropos env.py[:Class] it runs an Atropos environment, with --verifiers <env> a verifiers (verifiers.v1)
environment, unchanged and with its own flags (vf-eval's for verifiers: -m, --client.base-url, -n, -r, --env.*).`;

/** The flag that writes a resumed run's JSONL again from the store when it was changed or deleted. */
export const REBUILD_OUTPUT_FLAGS = {
  'rebuild-output': z
    .boolean()
    .optional()
    .describe('resuming a run (--env.run_id): write its JSONL again from the trajectory store, every group it delivered, then go on'),
};

/** Atropos's `process` defaults: keep every group and its messages (YAML and flags still win). */
export const PROCESS_PLAN: CommandOptions = {
  defaults: { ensure_scores_are_not_same: false, include_messages: true },
  commandFlags: { ...METRICS_FLAGS, ...REBUILD_OUTPUT_FLAGS },
};

/** Workflow id of a run's env-run: resuming a run attaches to it. */
export function envRunId(runId: string, environment: string): string {
  return `clotho/${runId}/${environment}`;
}

/** `clotho process`: runs an environment's groups durably and writes them to JSONL and HTML. */
export async function processCommand(argv: string[], io: CommandIo): Promise<number> {
  const plan = await planRun(argv, PROCESS_PLAN);
  for (const notice of [...plan.notices, ...processEvalNotices(plan)]) io.err(`clotho process: ${notice}`);
  const env = plan.config.env;
  const resumed = env.run_id !== null;
  let path = jsonlPath(env.data_path_to_save_groups ?? `data/${plan.definition.name}.jsonl`, resumed);
  const totalGroups = env.total_steps;
  if (totalGroups <= 0) throw new ConfigError([`--env.total_steps: expected a positive number of groups to process, got ${totalGroups}`]);
  const rebuildOutput = (plan.config.rest.flags as { 'rebuild-output'?: boolean })['rebuild-output'] === true;
  const settleOutput = async (temporal: TemporalRuntime) => {
    path =
      (await resumedOutput(temporal, plan.store, { runId: plan.runId, environment: plan.definition.name, resumed, rebuildOutput }, io)) ??
      path;
  };
  return withRunSession(
    plan,
    async ({ temporal, workers, interrupted, metrics, inference }) => {
      const input: EnvRunInput = { ...envRunSettings(plan, temporal.searchAttributes), totalGroups, sink: { kind: 'jsonl', path } };
      io.out(`run ${plan.runId}: ${totalGroups} groups of ${plan.definition.name} → ${path}`);
      const ui = rolloutsUiUrl(temporal.endpoint, plan.runId);
      if (ui) io.out(`Temporal UI: ${ui}`);
      // The dev server this command started stops with it; its SQLite file keeps the history for `clotho temporal start`.
      if (ui && temporal.endpoint.started)
        io.out('  (the dev server stops with this run; `npx clotho temporal start` serves its history again at this link)');
      const watch = () =>
        raceWatching(
          (signal) =>
            runToEnd(temporal, { runId: plan.runId, environment: plan.definition.name }, { type: 'envRun', input }, io, signal, (n) =>
              outageNote(inference.policy.status(), n),
            ),
          workers.done.then(never),
          interrupted,
        );
      let result;
      try {
        result = await withWandbLogging(
          {
            plan,
            temporal,
            metrics,
            envRunId: envRunId(plan.runId, plan.definition.name),
            cadence: { kind: 'process' },
            notice: (line) => io.err(`clotho process: ${line}`),
          },
          watch,
          (r) => (r.failed > 0 ? 1 : 0),
        );
      } catch (error) {
        if (error instanceof OutputChanged) return reportOutputChanged(error, 'process', argv, plan.runId, io);
        throw error;
      }
      return reportProcessed(result, totalGroups, path, `${plan.definition.name} · ${plan.runId}`, io);
    },
    settleOutput,
  );
}

/**
 * A resumed run's JSONL, checked (or rebuilt, with `--rebuild-output`) before its workers poll: the file its env-run
 * writes, which this command names whatever its flags say. Undefined for a new run, or one with no env-run yet.
 */
export async function resumedOutput(
  temporal: TemporalRuntime,
  store: TrajectoryStore,
  run: { runId: string; environment: string; resumed: boolean; rebuildOutput: boolean },
  io: CommandIo,
): Promise<string | undefined> {
  if (!run.resumed) {
    if (run.rebuildOutput) throw new ConfigError(['--rebuild-output: rebuilds the JSONL of a run resumed with --env.run_id']);
    return undefined;
  }
  const workflowId = envRunId(run.runId, run.environment);
  return settleRunOutput({ client: temporal.client, store, runId: run.runId, workflowId, rebuildOutput: run.rebuildOutput, io });
}

/** A finished `process` run's last lines: the progress line, the HTML page beside the JSONL, each failure; its exit code. */
export async function reportProcessed(result: EnvRunResult, total: number, path: string, title: string, io: CommandIo): Promise<number> {
  io.status?.('');
  io.out(progressLine({ ...result, total, inFlight: 0 }, 1, result.completed).replace(/ · [\d.]+ groups\/s/, ''));
  if (existsSync(path)) {
    const html = path.replace(/\.jsonl$/, '') + '.html';
    await writeGroupsHtml(path, html, title);
    io.out(`wrote ${result.delivered} groups to ${path} and ${html}`);
  }
  for (const failure of result.failures) io.err(`item ${failure.itemIndex} failed: ${failure.message}`);
  return result.failed > 0 ? 1 : 0;
}

/** A run's env-run workflow: its type, and the input to start it with. */
export type EnvRunStart =
  | { type: 'envRun'; input: Parameters<typeof envRun>[0] }
  | { type: 'atroposEnvRun'; input: Parameters<typeof atroposEnvRun>[0] }
  | { type: 'verifiersEnvRun'; input: Parameters<typeof verifiersEnvRun>[0] };

/** Starts the run's env-run (or attaches to it when resuming) and shows progress until it ends. */
export async function runToEnd(
  temporal: TemporalRuntime,
  { runId, environment }: { runId: string; environment: string },
  start: EnvRunStart,
  io: CommandIo,
  signal: AbortSignal,
  outage?: (groupsInFlight: number) => string,
): Promise<EnvRunResult> {
  const workflowId = envRunId(runId, environment);
  let handle;
  try {
    handle = await temporal.client.workflow.start<typeof envRun | typeof atroposEnvRun | typeof verifiersEnvRun>(start.type, {
      workflowId,
      taskQueue: runTaskQueues(runId, environment).workflows,
      args: [start.input as never],
      ...startedBy(temporal.searchAttributes),
      workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT_MS,
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    io.out(`run ${runId} has already finished; showing its result`);
    handle = temporal.client.workflow.getHandle<typeof envRun | typeof atroposEnvRun | typeof verifiersEnvRun>(workflowId);
  }
  return watchProgress(handle, io, temporal.connection, signal, SLOW_POLICY, outage);
}

/** Atropos's rule: a new run never overwrites a file; it takes the first free `_1`, `_2`, … suffix. */
export function jsonlPath(requested: string, resumed: boolean): string {
  const path = resolve(requested);
  if (resumed || !existsSync(path)) return path;
  const stem = path.replace(/\.jsonl$/, '');
  for (let n = 1; ; n++) if (!existsSync(`${stem}_${n}.jsonl`)) return `${stem}_${n}.jsonl`;
}

function never(): never {
  throw new Error('the workers stopped before the run finished');
}
