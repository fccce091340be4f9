import { whileTemporalOutOfReach } from './temporal-reach.js';
import type { Connection, WorkflowHandle, WorkflowResultType } from '@temporalio/client';
import type { envRun } from '../workflows/env-run.js';
import type { atroposEnvRun } from '../workflows/atropos-env-run.js';
import type { verifiersEnvRun } from '../workflows/verifiers-env-run.js';
import type { EnvRunResult, EnvRunStatus, EvalProgress, EvaluationResult } from '../schema/rollout.js';
import { envRunStatusQuery } from '../workflows/messages.js';
import type { CommandIo } from './io.js';
import { waitingSummary, waitingWatcher, type WaitingWork } from './waiting-work.js';
import { SINK_CORRUPTED } from '../activities/trajectories.js';
import { OutputChanged } from './jsonl-output.js';
import { SLOW_POLICY, slowSummary, slowWatcher, type SlowCollect, type SlowPolicy } from './slow-collects.js';

/** Environment metrics past this many stay in the workflow's result, off the progress line. */
const MAX_METRICS_SHOWN = 6;

/**
 * One line of run progress: done of total, rate, mean score, the environment's metrics, failures, drops by reason, and
 * what waits on a retry or a timeout (`waiting`, from {@link waitingSummary}).
 */
export function progressLine(status: EnvRunStatus, elapsedMs: number, completedAtStart: number, waiting = ''): string {
  const rate = ((status.completed - completedAtStart) / Math.max(elapsedMs, 1)) * 1000;
  const mean = status.scoredGroups > 0 ? (status.scoreSum / status.scoredGroups).toFixed(3) : '–';
  const drops = Object.entries(status.dropped);
  const dropped = drops.reduce((sum, [, n]) => sum + (n ?? 0), 0);
  const reasons = drops.length > 0 ? ` (${drops.map(([reason, n]) => `${reason} ${n}`).join(', ')})` : '';
  const metrics = Object.entries(status.metricSums ?? {})
    .slice(0, MAX_METRICS_SHOWN)
    .map(([name, sum]) => ` · ${name} ${(sum / Math.max(status.scoredGroups, 1)).toFixed(3)}`)
    .join('');
  const evaluation = status.evaluation;
  const last = evaluation?.results.at(-1);
  const evaluating =
    evaluation?.running != null
      ? ` · evaluating at step ${evaluation.running}`
      : last
        ? ` · eval at step ${last.step}: score ${last.metrics.score?.toFixed(3) ?? '–'}`
        : '';
  // An Atropos class's timing stats (its wandb_log's perf_stats): the mean time a group's collect took.
  const collect = status.logged?.metrics['train_perf/task_duration_mean'];
  const timing = collect === undefined ? '' : ` · collect ${collect.toFixed(2)} s`;
  // A serve run has no total of its own (the trainer's steps end it).
  const total = status.total >= Number.MAX_SAFE_INTEGER ? '' : `/${status.total}`;
  return (
    `groups ${status.completed}${total} · ${status.inFlight} in flight · ${rate.toFixed(2)} groups/s · ` +
    `mean score ${mean}${metrics} · failed ${status.failed} · dropped ${dropped}${reasons}${evaluating}${timing}` +
    (waiting ? ` · ${waiting}` : '')
  );
}

/** The log line of one finished evaluation during training: its step and every metric. */
export function evaluationLine(result: EvaluationResult): string {
  const correct = result.percentCorrect === null ? [] : [`percent_correct ${result.percentCorrect.toFixed(3)}`];
  const metrics = Object.entries(result.metrics).map(([name, value]) => `${name} ${Number.isInteger(value) ? value : value.toFixed(3)}`);
  return `evaluation at step ${result.step}: ${[...correct, ...metrics].join(' · ')}`;
}

/** The end of a run's last line: how many evaluations ran, skipped and failed. */
export function evaluationsLine(progress: EvalProgress): string {
  const done = progress.started - progress.failed - (progress.running === null ? 0 : 1);
  return `evaluations ${done} (skipped ${progress.skipped}, failed ${progress.failed})`;
}

/** Prints each evaluation that finished or failed since the last call, once. */
function evaluationReporter(io: CommandIo) {
  let lastStep = -1;
  let failed = 0;
  return (progress: EvalProgress | undefined) => {
    if (!progress) return;
    for (const result of progress.results.filter((r) => r.step > lastStep)) io.out(evaluationLine(result));
    lastStep = Math.max(lastStep, ...progress.results.map((r) => r.step));
    if (progress.failed > failed && progress.lastFailure) {
      io.err(`evaluation at step ${progress.lastFailure.step} failed: ${progress.lastFailure.message}`);
    }
    failed = progress.failed;
  };
}

/** Seconds between looks at the groups in flight for work waiting on a retry or a timeout. */
const WAITING_LOOK_EVERY = 3;

/** What waits, without the seconds that change on every look: a change of it is worth a line of its own. */
const waitingKinds = (waiting: readonly WaitingWork[]) =>
  waiting
    .map((w) => `${w.workflowId} ${w.waits} ${w.what} ${w.why}`)
    .sort()
    .join('\n');

/**
 * Shows an env-run's progress once a second (a status line on a terminal, a line every 10 s otherwise, and at once
 * when what waits on a retry or a timeout changes, an inference server goes down or comes back, or a collect runs far
 * past the run's usual time) until it ends, or until `signal` aborts: then its calls to
 * Temporal are cancelled, so the connection can close under it. Rejects with {@link OutputChanged} when the run's
 * JSONL was changed or deleted under it (its delivery waits, retried, for the file to be rebuilt).
 */
export async function watchProgress<W extends typeof envRun | typeof atroposEnvRun | typeof verifiersEnvRun>(
  handle: WorkflowHandle<W>,
  io: CommandIo,
  connection: Connection,
  signal: AbortSignal,
  slowPolicy: SlowPolicy = SLOW_POLICY,
  /** What is down, given the groups in flight (`outageNote`): on the line, and a line of its own when it changes. */
  outage: (groupsInFlight: number) => string = () => '',
): Promise<WorkflowResultType<W>> {
  const started = Date.now();
  const reportEvaluations = evaluationReporter(io);
  let completedAtStart: number | undefined;
  let lastLine = 0;
  // Groups in flight are described for work that waits, and for collects far past the run's usual time.
  const slowCollects = slowWatcher(handle.client, slowPolicy);
  let inFlight: { ids: string[]; taskQueue: string } | undefined;
  const lookForWaiting = waitingWatcher(handle.client, handle.workflowId, {
    described: slowCollects.observe,
    looked: (envRun, ids) => (inFlight = { ids, taskQueue: envRun.taskQueue }),
  });
  let polls = 0;
  let waiting: WaitingWork[] = [];
  let slow: SlowCollect[] = [];
  let shownKinds = '';
  // One query at a time, awaited before returning: the connection must not close under a query's retry.
  let polling: Promise<void> = Promise.resolve();
  // Aborted (with its reason) when what the poll sees ends the watch; the wait for the result ends with it.
  const stop = new AbortController();
  let settledAttempt = 0;
  const poll = async () => {
    const status = await handle.query(envRunStatusQuery).catch(() => undefined);
    if (!status) return;
    const first = polls === 0;
    if (polls++ % WAITING_LOOK_EVERY === 0) {
      waiting = await lookForWaiting().catch(() => waiting);
      slow = inFlight ? await slowCollects.look(inFlight.ids, inFlight.taskQueue).catch(() => slow) : [];
    }
    // Someone changed or deleted the run's JSONL: its delivery waits for the file to be rebuilt, which ends this
    // command. A failure already there at the first look is one this command's start settled (it rebuilt the file).
    const corrupted = waiting.flatMap((w) => (w.failure?.type === SINK_CORRUPTED ? [w.failure] : []));
    if (first) settledAttempt = Math.max(0, ...corrupted.map((f) => f.attempt));
    const changed = corrupted.find((f) => f.attempt > settledAttempt);
    if (changed) return stop.abort(new OutputChanged(changed.message));
    completedAtStart ??= status.completed;
    reportEvaluations(status.evaluation);
    const down = outage(status.inFlight);
    const notes = [down, waitingSummary(waiting), slowSummary(slow)].filter(Boolean).join(' · ');
    const line = progressLine(status, Date.now() - started, completedAtStart, notes);
    // An outage's seconds change on every look; what is down is what deserves a line of its own.
    const kinds = [down.replace(/\d+ s\b.*/, ''), waitingKinds(waiting), ...slow.map((s) => s.workflowId).sort()].join('\n');
    if (io.status) io.status(line);
    else if (Date.now() - lastLine >= 10_000 || kinds !== shownKinds) {
      lastLine = Date.now();
      io.out(line);
    }
    shownKinds = kinds;
  };
  const timer = setInterval(() => {
    polling = polling.then(poll);
  }, 1_000);
  try {
    const watching = AbortSignal.any([signal, stop.signal]);
    const result = await whileTemporalOutOfReach(() => connection.withAbortSignal(watching, () => handle.result()), {
      signal: watching,
      onOutage: () => io.out(`Temporal is out of reach (${connection.options.address}); waiting for it, the run goes on when it is back`),
      onBack: (seconds) => io.out(`Temporal is back after ${Math.round(seconds)} s`),
    }).catch((error: unknown) => {
      throw stop.signal.aborted ? stop.signal.reason : error;
    });
    await polling;
    reportEvaluations((result as EnvRunResult).evaluation);
    return result;
  } finally {
    clearInterval(timer);
    await polling;
  }
}
