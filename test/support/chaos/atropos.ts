import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ATROPOS_ENVS, atroposPython } from '../atropos.js';
import type { AtroposRun } from './processes.js';

/**
 * The chaos run of an Atropos environment: `clotho serve --atropos arithmetic_env.py` (the test environment written
 * as Atropos's are) in place of `clotho serve gsm8k`. The trainer knows a group by its question, so the run's data set
 * must hold no two alike: arithmetic_env draws its problems from a seeded generator, and 638 is the first seed whose
 * first 400 problems are all different (found by search; checked again on every run, below).
 */
export const ATROPOS_ENVIRONMENT = 'arithmetic_env';
const DATA_SET = { seed: 638, size: 400 };

/** Builds the environment's data set with its own `setup()` (on a stand-in holding only its config) and prints the questions. */
const QUESTIONS = `
import asyncio, json, sys, types
sys.path.insert(0, sys.argv[1])
from arithmetic_env import ArithmeticConfig, ArithmeticEnv
stand_in = types.SimpleNamespace(config=ArithmeticConfig(seed=int(sys.argv[2]), dataset_size=int(sys.argv[3])))
asyncio.run(ArithmeticEnv.setup(stand_in))
print(json.dumps([row["question"] for row in stand_in.train]))
`;

/**
 * What the chaos run needs to run arithmetic_env.py: the Python and offline settings, a tokenizer in `dir`, Atropos's
 * flags of the run, and the trainer's items file (`itemsFile`: the questions in the run's order). Refuses a run that
 * could take more items than the data set has different questions (`items`: the most the run may start).
 */
export async function prepareAtroposRun(dir: string, items: number): Promise<{ atropos: AtroposRun; itemsFile: string }> {
  const { python, tokenizer, env } = await atroposPython(dir);
  const { stdout } = await promisify(execFile)(python, ['-c', QUESTIONS, ATROPOS_ENVS, String(DATA_SET.seed), String(DATA_SET.size)], {
    env: { ...process.env, ...env },
  });
  const questions = JSON.parse(stdout) as string[];
  if (items > questions.length || new Set(questions).size !== questions.length) {
    throw new Error(
      `arithmetic_env's data set (seed ${DATA_SET.seed}) has ${new Set(questions).size} different questions of ${questions.length}; ` +
        `the run may take ${items} items, and the trainer knows a group by its question`,
    );
  }
  const itemsFile = join(dir, 'atropos-items.jsonl');
  await writeFile(itemsFile, questions.map((question) => `${JSON.stringify({ question })}\n`).join(''));
  const flags = [
    '--env.tokenizer_name',
    tokenizer,
    '--env.seed',
    String(DATA_SET.seed),
    '--env.dataset_size',
    String(DATA_SET.size),
    '--env.max_num_workers',
    '4',
  ];
  return { atropos: { spec: join(ATROPOS_ENVS, `${ATROPOS_ENVIRONMENT}.py`), flags, env }, itemsFile };
}
