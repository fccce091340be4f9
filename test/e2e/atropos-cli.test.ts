import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ATROPOS_ENVS, atroposPython } from '../support/atropos.js';
import { runClotho } from '../support/cli.js';
import { temporalEnv, useScratch } from '../support/runs.js';

// What a newcomer sees of `--atropos` before any run: Atropos's own help for the class, and one clear line for an
// environment file that is missing or broken, with no library's warnings before it.
const scratch = useScratch('clotho-atropos-cli-');
let env: Record<string, string>;

beforeAll(async () => {
  env = { ...temporalEnv(), ...(await atroposPython(scratch.path())).env };
}, 300_000);

/** What a library prints on import when it finds no deep-learning framework: noise to whoever runs an environment. */
const NOISE = /None of PyTorch|Traceback|^\s+File "/m;

describe('--atropos --help', () => {
  it("prints Atropos's help for the class (its --env.* and --openai.* fields), then Clotho's flags, without Temporal", async () => {
    const file = join(ATROPOS_ENVS, 'arithmetic_env.py');
    // Nothing listens there: help needs no Temporal server.
    const offline = { ...env, TEMPORAL_ADDRESS: '127.0.0.1:9' };
    const process = await runClotho(['process', '--atropos', file, '--help'], offline);
    expect(process.code).toBe(0);
    expect(process.stdout).toMatch(/^usage: arithmetic_env\.py process /m);
    for (const field of ['--env.group_size', '--env.dataset_size', '--openai.base_url', '--openai.model_name'])
      expect(process.stdout).toContain(field);
    // Not the internal worker's usage.
    expect(process.stdout).not.toMatch(/clotho-atropos|--task-queue/);
    expect(process.stdout).toMatch(/Clotho's flags \(taken out before Atropos's CLI reads the rest\):[\s\S]*--worker-restarts <n>/);
    expect(`${process.stdout}\n${process.stderr}`).not.toMatch(NOISE);
    expect(process.stderr).toBe('');

    const worker = await runClotho(['worker', '--atropos', file, 'serve', '--help'], offline);
    expect(worker.code).toBe(0);
    expect(worker.stdout).toMatch(/^usage: arithmetic_env\.py serve /m);
    expect(worker.stderr).toBe('');
  });
});

describe('a broken --atropos file', () => {
  it('is one line naming the file and what is wrong, with no library noise before it', async () => {
    const cases = [
      ['syntax_env.py', 'from atroposlib.envs.base import BaseEnv\ndef broken(:\n    pass\n', /syntax_env\.py: line 2: invalid syntax/],
      [
        'raising_env.py',
        'raise RuntimeError("no data set here")\n',
        /raising_env\.py: importing it raised RuntimeError: no data set here \(line 1\)/,
      ],
      ['no_class_env.py', 'x = 1\n', /no_class_env\.py defines no concrete BaseEnv subclass/],
    ] as const;
    for (const [name, source, expected] of cases) {
      const file = scratch.path(name);
      await writeFile(file, source);
      const run = await runClotho(['process', '--atropos', file, '--env.total_steps', '2', '--store', scratch.path('store')], env);
      expect(run.code, name).toBe(2);
      expect(run.stdout, name).toBe('');
      const lines = run.stderr.trim().split('\n');
      expect(lines, name).toHaveLength(1);
      expect(lines[0], name).toMatch(/^clotho process: /);
      expect(lines[0], name).toMatch(expected);
    }
  });
});
