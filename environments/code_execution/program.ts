import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { runSandboxed, type SandboxKill, type SandboxLimits } from 'clotho';
import type { CodeTask } from './tasks.js';

/**
 * Runs `program.py` as HumanEval's harness does (`exec` in a fresh namespace, so `if __name__ == "__main__":` blocks
 * stay quiet), then prints a token it read from stdin before the program ran. The token is the proof that the tests
 * ran to their end: a program that calls `sys.exit(0)` or `os._exit(0)` before them exits cleanly without it.
 */
export const HARNESS = `import os, sys


def run():
    token = sys.stdin.readline().strip()
    with open("program.py", encoding="utf-8") as f:
        source = f.read()
    exec(compile(source, "program.py", "exec"), {})
    sys.stdout.flush()
    os.write(1, ("\\n" + token + "\\n").encode())


run()
`;

/** The program that is run: HumanEval's prompt (imports, helpers, the signature), the model's code, then the tests. */
export function buildProgram(task: CodeTask, code: string): string {
  // A reply that continues the signature (a body) completes the prompt's function; a whole function redefines it.
  return [task.context, code, task.tests].filter((part) => part !== '').join('\n');
}

export interface RunSettings {
  python: string;
  readOnlyBinds: string[];
  limits: SandboxLimits;
  /** Sandboxes running at once in this process; 0: one per CPU core. */
  concurrency: number;
  signal?: AbortSignal;
}

export interface TestOutcome {
  passed: boolean;
  /** The run hit its wall or CPU time before the tests finished. */
  timedOut: boolean;
  killedBy: SandboxKill | null;
  exitCode: number | null;
  /** The end of stderr: the traceback of a failed test. */
  error: string;
}

// Too many sandboxes at once on a small machine would time out correct programs; the rest wait for a slot.
let running = 0;
const waiting: (() => void)[] = [];
async function withSlot<T>(limit: number, work: () => Promise<T>): Promise<T> {
  if (running < (limit > 0 ? limit : availableParallelism())) running++;
  else await new Promise<void>((resolve) => waiting.push(resolve)); // a finishing run hands its slot over
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

/**
 * Runs the task's tests on `code` in a sandbox. Failing tests, crashes, timeouts and resource limits are outcomes;
 * a sandbox that cannot start throws (the score step is retried, never scored).
 */
export async function runTests(task: CodeTask, code: string, settings: RunSettings): Promise<TestOutcome> {
  const token = randomBytes(16).toString('hex');
  const result = await withSlot(settings.concurrency, () =>
    runSandboxed({
      command: [settings.python, '-I', '-B', 'harness.py'],
      files: { 'harness.py': HARNESS, 'program.py': buildProgram(task, code) },
      stdin: `${token}\n`,
      limits: settings.limits,
      readOnlyBinds: settings.readOnlyBinds,
      ...(settings.signal ? { signal: settings.signal } : {}),
    }),
  );
  const passed = result.stdout.endsWith(`\n${token}\n`);
  return {
    passed,
    timedOut: !passed && result.timedOut,
    killedBy: result.killedBy,
    exitCode: result.exitCode,
    error: result.stderr.slice(-2000),
  };
}
