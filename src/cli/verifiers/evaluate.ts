import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { verifiersKey } from '../../activities/verifiers.js';
import { VerifiersResultSchema, type VerifiersResult } from '../../schema/verifiers.js';
import type { TrajectoryStore } from '../../store/trajectory-store.js';
import { runToEnd } from '../commands/process.js';
import type { CommandIo } from '../io.js';
import { raceWatching } from '../run.js';
import { viewSize } from './process.js';
import { withVerifiersSession } from './session.js';

/** The aggregates vf-eval reports for a run (prime_runs' `from_episodes`): over the trainable traces, errors per episode. */
export interface VerifiersSummary {
  avg_reward: number;
  avg_metrics: Record<string, number>;
  avg_error: number;
}

/**
 * vf-eval's aggregates of some finished episodes: rewards (Σ score·weight) and each reward's raw score and each metric
 * averaged over the trainable traces (all traces when none is), and the share of episodes not ok.
 */
export function summarize(episodes: VerifiersResult[]): VerifiersSummary {
  const traces = episodes.flatMap((episode) => episode.traces);
  const trainable = traces.filter((trace) => trace.trainable);
  const scored = trainable.length > 0 ? trainable : traces;
  const sums: Record<string, { sum: number; n: number }> = {};
  for (const trace of scored) {
    const values = { ...Object.fromEntries(Object.entries(trace.rewards).map(([name, r]) => [name, r.score])), ...trace.metrics };
    for (const [name, value] of Object.entries(values)) {
      const entry = (sums[name] ??= { sum: 0, n: 0 });
      entry.sum += value;
      entry.n++;
    }
  }
  return {
    avg_reward: scored.length > 0 ? scored.reduce((sum, trace) => sum + trace.reward, 0) / scored.length : 0,
    avg_metrics: Object.fromEntries(Object.entries(sums).map(([name, { sum, n }]) => [name, sum / n])),
    avg_error: episodes.length > 0 ? episodes.filter((episode) => !episode.ok).length / episodes.length : 0,
  };
}

/** The finished episodes of a run's groups, in task and sample order (a failed group's have none). */
async function finishedEpisodes(store: TrajectoryStore, runId: string, environment: string, groups: number, groupSize: number) {
  const episodes: VerifiersResult[] = [];
  for (let itemIndex = 0; itemIndex < groups; itemIndex++) {
    for (let sample = 0; sample < groupSize; sample++) {
      const raw = await store.tryGet(verifiersKey({ runId, environment, itemIndex }, sample, 'result'));
      if (raw !== undefined) episodes.push(VerifiersResultSchema.parse(raw));
    }
  }
  return episodes;
}

/**
 * `clotho evaluate --verifiers <env> <verifiers' flags>`: the episodes vf-eval would run (`-n` tasks of the view, `-r`
 * each, its sampling), run durably as a `verifiersEnvRun`, then vf-eval's metrics of them (`avg_reward`,
 * `avg_metrics`, `avg_error`) printed as JSON, and the episodes written, one per line as vf-eval's traces.jsonl has them,
 * to `--env.data_path_to_save_groups` (default `data/<env>-eval.jsonl`). An episode that keeps raising fails its group
 * (exit 1, the traceback in `clotho inspect`) and counts in no metric.
 */
export function verifiersEvaluateCommand(argv: string[], io: CommandIo): Promise<number> {
  return withVerifiersSession(
    argv,
    'evaluate',
    {},
    io,
    async ({ runId, environment, output, store, temporal, worker, inference, settings, stopped }) => {
      const { ready } = worker;
      const totalGroups = viewSize(ready);
      const scratch = await mkdtemp(join(tmpdir(), 'clotho-evaluate-'));
      try {
        const input = { ...settings, totalGroups, sink: { kind: 'jsonl' as const, path: join(scratch, 'groups.jsonl') } };
        io.out(
          `run ${runId}: evaluating ${ready.envId} (verifiers) on ${totalGroups} tasks × ${ready.groupSize}; model: ${inference.describe}`,
        );
        const result = await raceWatching(
          (signal) => runToEnd(temporal, { runId, environment }, { type: 'verifiersEnvRun', input }, io, signal),
          ...stopped,
        );
        const episodes = await finishedEpisodes(store, runId, environment, totalGroups, ready.groupSize);
        io.out(JSON.stringify(summarize(episodes), null, 2));
        const path = resolve(output ?? `data/${environment}-eval.jsonl`);
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, episodes.map((episode) => `${JSON.stringify(episode.episode)}\n`).join(''));
        io.out(`wrote ${episodes.length} episodes to ${path}`);
        for (const failure of result.failures) io.err(`item ${failure.itemIndex} failed: ${failure.message}`);
        return result.failed > 0 ? 1 : 0;
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    },
  );
}
