import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, playEpisode, resolveEnvConfig } from 'clotho';
import codeExecution, { SYSTEM_PROMPT, type CodeTask } from './index.js';
import { MBPP_ROWS, MBPP_WRONG, writeMbppJsonl } from './mbpp-fixture.js';
import { buildProgram } from './program.js';

const HUMANEVAL = fileURLToPath(new URL('./data/HumanEval.jsonl', import.meta.url));
interface HumanEvalRow {
  task_id: string;
  prompt: string;
  canonical_solution: string;
  entry_point: string;
}
const rows = (await readFile(HUMANEVAL, 'utf8'))
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as HumanEvalRow);
const HE = ['--env.data_path', HUMANEVAL];
const humanEval = await codeExecution.load(resolveEnvConfig(codeExecution, HE));
const fence = (code: string) => `Here is the function:\n\n\`\`\`python\n${code}\n\`\`\`\n`;
/** The canonical solution as a model would reply: the whole function (prompt and body) in a fence. */
const canonical = (i: number) => fence(rows[i]!.prompt + rows[i]!.canonical_solution);

const play = async (item: CodeTask, reply: string, argv: string[] = []) => {
  const { score, metrics } = await playEpisode(codeExecution, { item, replies: [reply], argv: [...HE, ...argv] });
  return { score, metrics };
};

describe('code_execution config and prompt', () => {
  it("defaults to HumanEval with the sandbox's limits, and rejects bad values", () => {
    expect(resolveEnvConfig(codeExecution)).toMatchObject({
      dataset: 'humaneval',
      data_path: null,
      split: 'all',
      challenge_tests: false,
      python: 'python3',
      python_binds: [],
      timeout: 10,
      cpu_time: 10,
      memory_mb: 1024,
      max_processes: 32,
      max_output_kb: 1024,
      concurrency: 0,
      group_size: 8,
    });
    expect(resolveEnvConfig(codeExecution, ['--env.dataset', 'mbpp', '--env.split', 'train', '--env.timeout', '2.5'])).toMatchObject({
      dataset: 'mbpp',
      split: 'train',
      timeout: 2.5,
    });
    expect(() => resolveEnvConfig(codeExecution, ['--env.dataset', 'apps'])).toThrow(ConfigError);
    expect(() => resolveEnvConfig(codeExecution, ['--env.timeout', '0'])).toThrow(ConfigError);
  });

  it("shows HumanEval's prompt as code to complete, MBPP's task with its tests", async () => {
    expect(codeExecution.prompt(humanEval.get(0), resolveEnvConfig(codeExecution, HE))).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: `Complete this Python function:\n\n\`\`\`python\n${rows[0]!.prompt}\`\`\`` },
    ]);
    const dir = await mkdtemp(join(tmpdir(), 'clotho-code-prompt-'));
    const config = resolveEnvConfig(codeExecution, ['--env.dataset', 'mbpp', '--env.data_path', await writeMbppJsonl(dir)]);
    const mbpp = await codeExecution.load(config);
    expect(codeExecution.prompt(mbpp.get(0), config)[1]!.content).toBe(
      `Write a function to add two numbers. Your code should pass these tests:\n\n${MBPP_ROWS[0]!.test_list.join('\n')}`,
    );
  });
});

describe('code_execution on HumanEval', () => {
  it('scores the canonical solutions of all 164 problems +1, whole functions in a fence and bare bodies alike', async () => {
    const started = Date.now();
    // Four sandboxes at a time (the environment's own limit); the rest wait for a slot.
    const results = await Promise.all(
      rows.map((row, i) => play(humanEval.get(i), i % 2 === 0 ? canonical(i) : row.canonical_solution, ['--env.concurrency', '4'])),
    );
    const failed = results.flatMap((r, i) => (r.score === 1 ? [] : [rows[i]!.task_id]));
    expect(failed).toEqual([]);
    expect(results.every((r, i) => r.metrics.passed === 1 && r.metrics.fenced === (i % 2 === 0 ? 1 : 0))).toBe(true);
    console.log(`code_execution: 164 HumanEval canonical solutions passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  it('scores wrong solutions -1: a failing assert, a syntax error, no code at all', async () => {
    const item = humanEval.get(0);
    const wrongBody = fence(`${rows[0]!.prompt}    return False\n`);
    expect(await play(item, wrongBody)).toEqual({ score: -1, metrics: { passed: 0, timed_out: 0, has_code: 1, fenced: 1 } });
    expect(await play(humanEval.get(2), fence('def truncate_number(number: float) -> float:\n    return number\n'))).toMatchObject({
      score: -1,
    });
    expect(await play(item, fence('def has_close_elements(numbers, threshold)\n    return True\n'))).toMatchObject({ score: -1 });
    expect(await play(item, 'I cannot solve this.')).toMatchObject({ score: -1, metrics: { has_code: 1, fenced: 0 } });
    expect(await play(item, '```bash\necho hi\n```')).toEqual({ score: -1, metrics: { passed: 0, timed_out: 0, has_code: 0, fenced: 0 } });
  });

  it('scores -1 a program that exits cleanly before its tests run', async () => {
    const right = rows[0]!.prompt + rows[0]!.canonical_solution;
    expect(await play(humanEval.get(0), fence(`${right}\nimport sys\nsys.exit(0)\n`))).toMatchObject({ score: -1 });
    expect(await play(humanEval.get(0), fence(`${right}\nimport os\nos._exit(0)\n`))).toMatchObject({ score: -1 });
  });

  it('is an infrastructure failure, never a score, when the sandbox cannot run the interpreter', async () => {
    await expect(play(humanEval.get(0), canonical(0), ['--env.python', 'no-such-python'])).rejects.toThrow(
      '"no-such-python" is not installed in the sandbox',
    );
  });
});

describe('code_execution: hostile programs are stopped and scored -1', () => {
  const right = rows[0]!.prompt + rows[0]!.canonical_solution;
  const item = () => humanEval.get(0);
  let server: Server;
  let port: number;
  let connections = 0;
  beforeAll(async () => {
    server = createServer((socket) => {
      connections++;
      socket.end('hello from the host');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("network: a solution that needs the host's TCP server passes outside the sandbox and fails inside", async () => {
    const task: CodeTask = {
      taskId: 'net',
      question: 'Return the greeting of the server.',
      entryPoint: 'greeting',
      context: '',
      tests: 'assert greeting() == "hello from the host"\n',
    };
    const code = `import socket\n\ndef greeting():\n    with socket.create_connection(("127.0.0.1", ${port}), timeout=5) as s:\n        return s.recv(100).decode()\n`;
    // Outside the sandbox the same program passes: the server is there to be reached.
    await promisify(execFile)('python3', ['-c', buildProgram(task, code)]);
    expect(connections).toBe(1);
    expect(await play(task, fence(code))).toEqual({ score: -1, metrics: { passed: 0, timed_out: 0, has_code: 1, fenced: 1 } });
    expect(connections).toBe(1);
  });

  it('a write outside its folder fails', async () => {
    const hostDir = await mkdtemp(join(tmpdir(), 'clotho-code-host-'));
    try {
      expect(await play(item(), fence(`open(${JSON.stringify(join(hostDir, 'escaped'))}, "w").write("x")\n${right}`))).toMatchObject({
        score: -1,
      });
      expect(await play(item(), fence(`open("/usr/escaped", "w").write("x")\n${right}`))).toMatchObject({ score: -1 });
      expect(await readdir(hostDir)).toEqual([]);
      // Its own folder is writable: the same program writing there passes.
      expect(await play(item(), fence(`open("scratch.txt", "w").write("x")\n${right}`))).toMatchObject({ score: 1 });
    } finally {
      await rm(hostDir, { recursive: true, force: true });
    }
  });

  it('a fork bomb', async () => {
    const bomb = 'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n';
    expect(await play(item(), fence(`${right}\n${bomb}`), ['--env.timeout', '2', '--env.max_processes', '8'])).toMatchObject({
      score: -1,
      metrics: { timed_out: 1 },
    });
  });

  it('an infinite loop, stopped by the wall time or by the CPU time', async () => {
    const loop = fence('def has_close_elements(numbers, threshold):\n    while True:\n        pass\n');
    expect(await play(item(), loop, ['--env.timeout', '2'])).toMatchObject({ score: -1, metrics: { timed_out: 1 } });
    expect(await play(item(), loop, ['--env.timeout', '30', '--env.cpu_time', '1'])).toMatchObject({
      score: -1,
      metrics: { timed_out: 1 },
    });
  });

  it('a memory hog', async () => {
    const hog = fence(
      'def has_close_elements(numbers, threshold):\n    hoard = []\n    while True:\n        hoard.append(bytearray(16 << 20))\n',
    );
    expect(await play(item(), hog, ['--env.memory_mb', '256'])).toEqual({
      score: -1,
      metrics: { passed: 0, timed_out: 0, has_code: 1, fenced: 1 },
    });
  });

  it('a flood of output', async () => {
    const flood = fence(`${right}\nwhile True:\n    print("spam" * 1000)\n`);
    expect(await play(item(), flood, ['--env.max_output_kb', '64'])).toMatchObject({ score: -1, metrics: { timed_out: 0 } });
  });
});

describe('code_execution on MBPP', () => {
  it('scores the reference code +1 and wrong code -1; challenge tests catch what the basic ones miss', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clotho-code-mbpp-'));
    const argv = ['--env.dataset', 'mbpp', '--env.data_path', await writeMbppJsonl(dir)];
    const scores = async (flags: string[], replies: (row: (typeof MBPP_ROWS)[number]) => string) => {
      const config = resolveEnvConfig(codeExecution, [...argv, ...flags]);
      const items = await codeExecution.load(config);
      return Promise.all(
        MBPP_ROWS.map(
          async (row, i) =>
            (await playEpisode(codeExecution, { item: items.get(i), replies: [replies(row)], argv: [...argv, ...flags] })).score,
        ),
      );
    };
    expect(await scores([], (row) => fence(row.code))).toEqual([1, 1, 1]);
    expect(await scores([], (row) => fence(MBPP_WRONG[row.task_id]!))).toEqual([-1, -1, 1]);
    expect(await scores(['--env.challenge_tests', 'true'], (row) => fence(MBPP_WRONG[row.task_id]!))).toEqual([-1, -1, -1]);
    expect(await scores(['--env.challenge_tests', 'true'], (row) => fence(row.code))).toEqual([1, 1, 1]);
  });
});
