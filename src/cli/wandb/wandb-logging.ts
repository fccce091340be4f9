import type { WorkerMetrics } from '../../workers/metrics.js';
import type { BatcherView } from '../../schema/batcher.js';
import { batcherViewQuery, envRunStatusQuery } from '../../workflows/messages.js';
import { followGroups } from '../group-feed.js';
import { InterruptedError } from '../interrupt.js';
import type { RunPlan } from '../run.js';
import type { TemporalRuntime } from '../runtime.js';
import { AtroposMetrics, type ServerReadings } from './atropos-metrics.js';
import { openWandbRun, wandbRunName } from './wandb-run.js';
import { evalMetrics } from './wandb-eval.js';
import type { WandbMetrics } from './local-run.js';

/** Where a run's groups go, which decides when Atropos logs: after every group, or at the trainer's steps. */
export type WandbCadence = { kind: 'process' } | { kind: 'serve'; batcherId: string; registeredName: string; startingStep: number };

export interface WandbLoggingOptions {
  plan: RunPlan;
  temporal: TemporalRuntime;
  /** Workflow id of the run's env-run. */
  envRunId: string;
  cadence: WandbCadence;
  /** The process's worker metrics: inference timings for `server/*`, tokens for throughput. */
  metrics?: WorkerMetrics;
  notice(line: string): void;
}

/**
 * With `--env.use_wandb`, runs `body` (which watches the env-run to its end) while logging the run's groups to
 * W&B under Atropos's names, from this process: finished groups are followed from outside the workflows
 * (`followGroups`), so a crash of this process loses only the charts of the groups in flight, never the groups.
 * `clotho process` logs after every group, as Atropos's process mode; `clotho serve` logs when the trainer's
 * step moves on and at least min_items_sent_before_logging groups were delivered since the last log, at that
 * step, with the keys prefixed by the name the trainer gave the environment, as Atropos's serve mode.
 */
export async function withWandbLogging<T>(
  options: WandbLoggingOptions,
  body: () => Promise<T>,
  exitCode: (result: T) => number,
): Promise<T> {
  const { plan, temporal, cadence, metrics } = options;
  const env = plan.config.env;
  if (!env.use_wandb) return body();
  const view =
    cadence.kind === 'serve'
      ? await temporal.client.workflow
          .getHandle(cadence.batcherId)
          .query(batcherViewQuery)
          .catch((): BatcherView | undefined => undefined)
      : undefined;
  const run = await openWandbRun(
    {
      name: wandbRunName(env.wandb_name ?? plan.definition.name),
      project: process.env.WANDB_PROJECT || view?.wandb.project || 'uncategorized',
      ...(process.env.WANDB_ENTITY ? { entity: process.env.WANDB_ENTITY } : {}),
      ...(view?.wandb.group ? { group: view.wandb.group } : {}),
      config: { ...env },
    },
    options.notice,
  );
  const trainerMax = view?.info.max_token_len ?? -1;
  const atropos = new AtroposMetrics({
    groupSize: env.group_size,
    maxTokenLength: trainerMax > 0 ? trainerMax : env.max_token_length,
    numRolloutsToKeep: env.num_rollouts_to_keep,
    numRolloutsPerGroupForLogging: env.num_rollouts_per_group_for_logging,
    prefix: cadence.kind === 'serve' ? cadence.registeredName : null,
  });
  const readings = (): ServerReadings | undefined =>
    metrics && { seconds: metrics.inference.seconds, attempts: metrics.inference.attempts, completionTokens: metrics.completionTokens() };
  atropos.flush(Date.now(), readings()); // the throughput baseline
  let step = 0;
  // Atropos starts from the step the trainer was at when the environment registered.
  let trainerStep = cadence.kind === 'serve' ? cadence.startingStep : 0;
  let sentSinceLog = 0;
  let loggedStep = -1;
  // Serve-mode evaluations (steps_per_eval), as Atropos logs them: with the next log, at the trainer's step then.
  let pendingEval: WandbMetrics = {};
  let evalStepSeen = -1;
  const prefix = cadence.kind === 'serve' ? `${cadence.registeredName}_` : '';
  const feed = followGroups({
    client: temporal.client,
    connection: temporal.connection,
    runId: plan.runId,
    environment: plan.definition.name,
    envRunId: options.envRunId,
    store: plan.store,
    concurrency: env.max_groups_in_flight + 8,
    onGroup(group) {
      atropos.add(group);
      if (cadence.kind === 'process') run.log(atropos.flush(Date.now(), readings()), step++);
      else if (group.group) sentSinceLog++;
    },
    onPoll: () => logAtTrainerStep(false),
  });
  /**
   * Serve mode: logs what was delivered since the last log once the trainer's step moved on. At the end (`last`) it
   * also logs when the step did not move since the last poll, so that the groups of a run whose trainer took its last
   * batches between two polls are not lost to the charts.
   */
  async function logAtTrainerStep(last: boolean): Promise<void> {
    if (cadence.kind !== 'serve') return;
    const current = await temporal.client.workflow
      .getHandle(cadence.batcherId)
      .query(batcherViewQuery)
      .then(
        (v) => v.status.current_step,
        () => undefined,
      );
    await collectEvaluations();
    if (current === undefined || (current === trainerStep && !last)) return;
    const evaluated = Object.keys(pendingEval).length > 0;
    const sent = sentSinceLog > 0 && sentSinceLog >= env.min_items_sent_before_logging;
    if (sent || evaluated) {
      // W&B steps only grow: a last log at the step already logged goes one past it.
      loggedStep = Math.max(current, loggedStep + 1);
      run.log({ ...(sent ? atropos.flush(Date.now(), readings()) : {}), ...pendingEval }, loggedStep);
      if (sent) sentSinceLog = 0;
      pendingEval = {};
    }
    trainerStep = current;
  }
  /** Takes the evaluations the env-run finished since the last look (the newest one's metrics when several did). */
  async function collectEvaluations(): Promise<void> {
    const status = await temporal.client.workflow
      .getHandle(options.envRunId)
      .query(envRunStatusQuery)
      .catch(() => undefined);
    for (const result of status?.evaluation?.results ?? []) {
      if (result.step <= evalStepSeen) continue;
      evalStepSeen = result.step;
      // Prefixed like the train keys: Atropos environments add their eval metrics to the log that prepends the name.
      const keyed = Object.entries(evalMetrics(result.metrics, result.percentCorrect)).map(([k, v]) => [`${prefix}${k}`, v]);
      pendingEval = { ...pendingEval, ...Object.fromEntries(keyed) };
    }
  }
  let code = 1;
  try {
    const result = await body();
    code = exitCode(result);
    await feed.drain();
    await logAtTrainerStep(true);
    return result;
  } catch (error) {
    code = error instanceof InterruptedError ? 130 : 1;
    await feed.stop();
    throw error;
  } finally {
    await run.finish(code);
  }
}
