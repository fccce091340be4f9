import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { runClotho } from '../support/cli.js';
import { temporalEnv, useScratch } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';
import { VERIFIERS_ENVS, verifiersPolicy, verifiersPython } from '../support/verifiers.js';

/**
 * `clotho evaluate --verifiers` against vf-eval itself (verifiers 0.4.0's CLI, from the same venv): the same
 * environment, flags and scripted model give the same reward for every episode of every task.
 */
const scratch = useScratch('clotho-verifiers-evaluate-');
let python: string;
let env: Record<string, string>;

beforeAll(async () => {
  const found = await verifiersPython();
  python = found.python;
  env = { ...temporalEnv(), ...found.env };
}, 600_000);

/** An episode line as vf-eval's traces.jsonl (and Clotho's evaluate output) holds it. */
interface EpisodeLine {
  task: { hash: string; data: { prompt: unknown } };
  traces: { rewards: Record<string, { score: number; weight: number } | null> }[];
}

/** Each task's rewards (Σ score·weight of its trace), one per episode, sorted, keyed by the task's hash. */
function rewardsByTask(lines: EpisodeLine[]): Record<string, number[]> {
  const byTask: Record<string, number[]> = {};
  for (const line of lines) {
    const reward = Object.values(line.traces[0]!.rewards).reduce((sum, r) => sum + (r ? r.score * r.weight : 0), 0);
    (byTask[line.task.hash] ??= []).push(reward);
  }
  for (const rewards of Object.values(byTask)) rewards.sort();
  return byTask;
}

const readLines = async (path: string) =>
  (await readFile(path, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as EpisodeLine);

/** The traces.jsonl vf-eval wrote somewhere under `dir`. */
async function tracesUnder(dir: string): Promise<string> {
  const files = (await readdir(dir, { recursive: true })).filter((file) => file.endsWith('traces.jsonl'));
  expect(files).toHaveLength(1);
  return join(dir, files[0]!);
}

describe('clotho evaluate --verifiers', () => {
  it("gives vf-eval's reward for every episode of every task, with the same scripted model", async () => {
    // By the request's content, whoever asks: tasks with an even first term answered right, the others wrong.
    const policy = await verifiersPolicy((turn) => {
      const [, a, b] = /What is (\d+) \+ (\d+)/.exec(turn.prompt) ?? [];
      return { text: String(Number(a) + Number(b) + (Number(a) % 2)) };
    });
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: policy }));
    const flags = [
      ...['-m', 'scripted-model', '--client.base-url', model.baseUrl, '-n', '3', '-r', '2'],
      ...['--env.agent.harness.id', 'null', '--env.agent.runtime.type', 'subprocess'],
      ...['--sampling.temperature', '0', '--sampling.max-tokens', '64'],
      // The scripted model asks no key; verifiers wants a variable that holds one.
      ...['--client.api-key-var', 'SCRIPTED_MODEL_KEY'],
    ];

    const vfOut = scratch.path('vf-eval');
    await promisify(execFile)(join(dirname(python), 'vf-eval'), ['arith_env', ...flags, '--no-push', '-o', vfOut], {
      env: {
        ...process.env,
        ...env,
        PYTHONPATH: VERIFIERS_ENVS,
        PATH: [dirname(python), process.env.PATH].join(delimiter),
        SCRIPTED_MODEL_KEY: 'none',
      },
      maxBuffer: 64 << 20,
    });
    const expected = rewardsByTask(await readLines(await tracesUnder(vfOut)));
    expect(Object.keys(expected)).toHaveLength(3);

    const out = scratch.path('clotho-eval.jsonl');
    const args = ['evaluate', '--verifiers', join(VERIFIERS_ENVS, 'arith_env.py'), ...flags, '--store', scratch.path('store')];
    const { code, stdout, stderr } = await runClotho([...args, '--env.data_path_to_save_groups', out], {
      ...env,
      SCRIPTED_MODEL_KEY: 'none',
    });
    expect(code, stderr).toBe(0);
    const episodes = await readLines(out);
    expect(episodes).toHaveLength(6);
    expect(rewardsByTask(episodes)).toEqual(expected);
    // vf-eval's aggregate: tasks 0 and 2 right, task 1 wrong, two episodes each.
    const summary = JSON.parse(stdout.slice(stdout.indexOf('{'), stdout.lastIndexOf('}') + 1)) as { avg_reward: number; avg_error: number };
    expect(summary.avg_reward).toBeCloseTo(2 / 3, 6);
    expect(summary.avg_error).toBe(0);
  }, 600_000);
});
