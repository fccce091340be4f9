import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TemporalFailure, WorkflowFailedError } from '@temporalio/client';
import type { AtroposEvaluationInput } from '../../schema/atropos.js';
import type { atroposEvaluation } from '../../workflows/atropos-evaluation.js';
import { evaluationId } from '../../workflows/messages.js';
import { EVALUATION_TIMEOUT_MS } from '../eval-schedule.js';
import type { CommandIo } from '../io.js';
import { raceWatching } from '../run.js';
import { startedBy } from '../versions.js';
import { withAtroposSession } from './session.js';

/** What Atropos's evaluate leaves in data_dir_to_save_evals: its CLI the config, evaluate_log the rest. */
const EVAL_FILES = ['metrics.json', 'samples.jsonl', 'evaluate_config.yaml'];

/**
 * `clotho evaluate --atropos env.py[:Class] <Atropos's evaluate flags>`: the environment built as Atropos's `evaluate`
 * subcommand builds it (its flags, defaults and `--help`; evaluate_config.yaml written), its `evaluate()` run once as
 * an `atroposEvaluation` workflow on the Python worker, retried under `--steps.generate`'s policy; prints the metrics
 * it produced, and exits 1 with the Python traceback when it keeps raising.
 */
export function atroposEvaluateCommand(argv: string[], io: CommandIo): Promise<number> {
  return withAtroposSession(argv, 'evaluate', {}, io, async ({ runId, environment, temporal, worker, settings, steps, stopped }) => {
    const workflowId = evaluationId(runId, environment, 0);
    const input: AtroposEvaluationInput = {
      runId,
      environment,
      taskQueue: settings.taskQueues.atropos,
      // Heartbeating on the worker, as a group's collect: a dead worker is noticed in 10 s, however long it evaluates.
      evaluate: { ...steps.generate, local: false, heartbeatTimeoutMs: 10_000, startToCloseTimeoutMs: EVALUATION_TIMEOUT_MS },
    };
    io.out(`run ${runId}: evaluating ${worker.ready.className} (Atropos) as workflow ${workflowId}`);
    const handle = await temporal.client.workflow.start<typeof atroposEvaluation>('atroposEvaluation', {
      workflowId,
      taskQueue: settings.taskQueues.workflows,
      args: [input],
      ...startedBy(temporal.searchAttributes),
    });
    let evaluated;
    try {
      evaluated = await raceWatching(() => handle.result(), ...stopped);
    } catch (error) {
      if (!(error instanceof WorkflowFailedError)) throw error;
      io.err(`evaluate failed: ${failureOf(error)} (clotho inspect ${workflowId})`);
      return 1;
    }
    io.out(JSON.stringify(evaluated.metrics, null, 2));
    const dir = worker.ready.config.data_dir_to_save_evals;
    if (typeof dir === 'string') {
      const written = EVAL_FILES.filter((file) => existsSync(join(dir, file)));
      io.out(`wrote ${written.join(', ') || 'nothing'} to ${resolve(dir)}`);
    }
    return 0;
  });
}

/** The innermost failure's message and, when Python raised it, its traceback (the failure's stack trace). */
function failureOf(error: Error): string {
  let cause: Error = error;
  while (cause.cause instanceof Error) cause = cause.cause;
  const failure = cause instanceof TemporalFailure ? cause.failure : undefined;
  const foreign = failure?.stackTrace && failure.source !== 'TypeScriptSDK';
  return foreign ? `${cause.message}\n${failure.stackTrace!.trimEnd()}` : cause.message;
}
