import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { z } from 'zod';
import { judgeOrMissing } from '../../activities/environment-context.js';
import { evaluateHarnessItem } from '../../activities/harness.js';
import type { LoadedEnvironment } from '../../env/loaded.js';
import { FileSystemStore } from '../../store/trajectory-store.js';
import { isMultiTurn } from '../../env/define.js';
import { evaluateEnvironment, evaluationTurn } from '../../env/evaluate.js';
import { writeEvaluation } from '../../env/evaluation-files.js';
import { loadEnvironmentData } from '../../env/loaded.js';
import { closeMcpServers } from '../../env/mcp.js';
import type { CommandIo } from '../io.js';
import { openInference, type RunInference } from '../inference-setup.js';
import { planRun, type RunPlan } from '../run.js';
import { logEvaluation } from '../wandb/wandb-eval.js';

export const EVALUATE_USAGE = `Usage: clotho evaluate <environment> [--items 100] [--env.<field> v] [--openai.<field> v]

Evaluates the policy on an environment's items (the environment's own evaluate, or one greedy completion per
item, parsed and scored), prints the metrics, and with --env.data_dir_to_save_evals writes metrics.json,
samples.jsonl and evaluate_config.yaml there, as Atropos does. With --atropos env.py[:Class] it runs an Atropos
environment's own evaluate, with Atropos's evaluate flags (--help after the file prints them); with
--verifiers <env> a verifiers environment's episodes, with vf-eval's flags, and vf-eval's metrics of them.`;

export const EVALUATE_FLAGS = {
  items: z.coerce.number().int().positive().default(100).describe('items to evaluate (the first n)'),
};

/** `clotho evaluate`: one evaluation pass with evaluation sampling (temperature 0) on the eval slots. */
export async function evaluateCommand(argv: string[], io: CommandIo): Promise<number> {
  const plan = await planRun(argv, { commandFlags: EVALUATE_FLAGS, runConfig: false });
  for (const notice of plan.notices) io.err(`clotho evaluate: ${notice}`);
  const { env } = plan.config;
  const flags = plan.config.rest.flags as unknown as { items: number; model: string };
  const inference = await openInference(plan, flags.model);
  const harnessStore = plan.definition.harness ? await mkdtemp(join(tmpdir(), 'clotho-evaluate-')) : null;
  try {
    const environment = await loadEnvironmentData(plan.definition, env);
    const turn = evaluationTurn(inference.policy, env);
    const evaluation = await evaluateEnvironment(environment, turn, {
      ...(harnessStore ? { episode: harnessEpisodes(plan, environment, inference, harnessStore) } : {}),
      items: flags.items,
      concurrency: env.max_eval_workers,
      maxTurns: isMultiTurn(plan.definition) ? env.max_turns : 1,
      judge: judgeOrMissing(inference.judge, plan.definition.name),
    });
    const { metrics, samples } = evaluation;
    io.out(JSON.stringify(metrics, null, 2));
    await logEvaluation(plan, evaluation, (line) => io.err(`clotho evaluate: ${line}`));
    if (env.data_dir_to_save_evals) {
      const dir = env.data_dir_to_save_evals;
      await writeEvaluation(dir, metrics, samples);
      await writeFile(join(dir, 'evaluate_config.yaml'), stringify({ env, openai: plan.config.servers }));
      io.out(`wrote metrics.json, samples.jsonl and evaluate_config.yaml to ${dir}`);
    }
    return 0;
  } finally {
    if (harnessStore) await rm(harnessStore, { recursive: true, force: true });
    await closeMcpServers();
    await inference.close();
  }
}

/**
 * A harness environment's evaluation episodes: its agent runs each item once with greedy sampling, its calls recorded
 * in a store of its own that is deleted afterwards (an evaluation asks the model every call anew).
 */
function harnessEpisodes(plan: RunPlan, environment: LoadedEnvironment, inference: RunInference, store: string) {
  const { env } = plan.config;
  const deps = { store: new FileSystemStore(store), continuation: () => inference.continuation };
  return (itemIndex: number) =>
    evaluateHarnessItem(deps, environment, {
      runId: 'evaluate',
      environment: plan.definition.name,
      itemIndex,
      sample: 0,
      sampling: { temperature: 0, topP: 1 },
      maxTurns: env.max_turns,
      maxTokenLength: env.max_token_length,
    });
}
