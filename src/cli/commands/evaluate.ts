import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { z } from 'zod';
import { judgeOrMissing } from '../../activities/environment-context.js';
import { isMultiTurn } from '../../env/define.js';
import { evaluateEnvironment, evaluationTurn } from '../../env/evaluate.js';
import { writeEvaluation } from '../../env/evaluation-files.js';
import { loadEnvironmentData } from '../../env/loaded.js';
import { closeMcpServers } from '../../env/mcp.js';
import type { CommandIo } from '../io.js';
import { openInference } from '../inference-setup.js';
import { planRun } from '../run.js';
import { logEvaluation } from '../wandb/wandb-eval.js';

export const EVALUATE_USAGE = `Usage: clotho evaluate <environment> [--items 100] [--env.<field> v] [--openai.<field> v]

Evaluates the policy on an environment's items (the environment's own evaluate, or one greedy completion per
item, parsed and scored), prints the metrics, and with --env.data_dir_to_save_evals writes metrics.json,
samples.jsonl and evaluate_config.yaml there, as Atropos does. With --atropos env.py[:Class] it runs an Atropos
environment's own evaluate, with Atropos's evaluate flags (--help after the file prints them).`;

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
  try {
    const environment = await loadEnvironmentData(plan.definition, env);
    const turn = evaluationTurn(inference.policy, env);
    const evaluation = await evaluateEnvironment(environment, turn, {
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
    await closeMcpServers();
    await inference.close();
  }
}
