import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import { evaluateEnvironment, evaluationTurn, percentCorrect, type EvaluationInference, type ScoredItem } from '../env/evaluate.js';
import { resumableEvaluationFiles } from '../env/evaluation-files.js';
import { environmentNamed, type LoadedEnvironment } from '../env/loaded.js';
import type { EvaluationInput, EvaluationResult } from '../schema/rollout.js';
import { judgeOrMissing, liveJudge } from './environment-context.js';
import type { ModelClient } from '../env/define.js';

export interface EvaluationActivityDeps {
  environments: Record<string, LoadedEnvironment>;
  /** The run's policy servers; a server manager evaluates on their eval slots (`num_requests_for_eval`). */
  inference: (environment: string) => EvaluationInference;
  judge?: (environment: string) => ModelClient | undefined;
}

/** What the activity heartbeats: the items scored so far, so a retry after a crash evaluates only the rest. */
interface EvaluationHeartbeat {
  done: ScoredItem[];
}

/**
 * The evaluation during training (LLM queue): what `clotho evaluate` does with the run's loaded environment, at one
 * trainer step. Only metrics leave the activity (no messages in the history); the items scored so far ride on the
 * heartbeat, so a retried attempt goes on where the last one stopped.
 */
export function createEvaluationActivities({ environments, inference, judge }: EvaluationActivityDeps) {
  return {
    async evaluateAtStep(input: EvaluationInput): Promise<EvaluationResult> {
      const environment = environmentNamed(environments, input.environment);
      const context = Context.current();
      const resumed = (context.info.heartbeatDetails as EvaluationHeartbeat | undefined)?.done ?? [];
      let latest: EvaluationHeartbeat = { done: resumed };
      const beat = () => context.heartbeat(latest);
      const call = { signal: context.cancellationSignal, onProgress: beat };
      const configuredJudge = judge?.(input.environment);
      const files = input.saveDir === undefined ? undefined : resumableEvaluationFiles(join(input.saveDir, `step-${input.step}`));
      const run = await evaluateEnvironment(environment, evaluationTurn(inference(input.environment), environment.config, call), {
        items: input.items,
        concurrency: input.concurrency,
        maxTurns: input.maxTurns,
        judge: configuredJudge ? liveJudge(configuredJudge) : judgeOrMissing(undefined, input.environment),
        done: resumed,
        async onItem(scored, sample) {
          // The sample is on disk before the heartbeat says its item is done, so a resumed attempt still writes it.
          await files?.item(sample);
          latest = { done: [...scored] };
          beat();
        },
      });
      await files?.finish(run.metrics);
      const scored = latest.done;
      return { step: input.step, metrics: run.metrics, percentCorrect: environment.definition.evaluate ? null : percentCorrect(scored) };
    },
  };
}

export type EvaluationActivities = ReturnType<typeof createEvaluationActivities>;
