import { execFile, execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ensureAtroposPython } from '../../src/cli/atropos/python.js';
import type { CliRun } from './cli.js';
import type { Responder } from './scripted-openai.js';

/** The Atropos-style environments written for clients/python-atropos's tests. */
export const ATROPOS_ENVS = fileURLToPath(new URL('../../clients/python-atropos/tests/envs/', import.meta.url));
const TINY_TOKENIZER = fileURLToPath(new URL('../../clients/python-atropos/tests/tiny_tokenizer.py', import.meta.url));

/**
 * The Python that runs the Atropos worker (installing the project's venv when missing, as the CLI does), and the
 * environment the CLI needs to run it offline: a generated tokenizer in `dir`, no Hub, no wandb.
 */
export async function atroposPython(dir: string): Promise<{ python: string; tokenizer: string; env: Record<string, string> }> {
  const python = await ensureAtroposPython(() => undefined);
  const offline = { HF_HUB_OFFLINE: '1', WANDB_MODE: 'disabled' };
  await promisify(execFile)(python, [TINY_TOKENIZER, dir], { env: { ...process.env, ...offline } });
  return { python, tokenizer: dir, env: { ...offline, CLOTHO_ATROPOS_PYTHON: python } };
}

/** A command's stderr without the lines its Atropos environment printed (`[env] …`): what Clotho itself said. */
export function clothoStderr(stderr: string): string {
  return stderr
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('[env] '))
    .join('\n');
}

/** Answers arithmetic_env.py's questions ("What is a + b?"): the first sample right, the others wrong. */
export function arithmeticResponder(delayMs = 0): Responder {
  return (body) => {
    const messages = (body as { messages?: { content?: unknown }[] }).messages ?? [];
    const [, a, b] = /What is (\d+) \+ (\d+)\?/.exec(String(messages.at(-1)?.content)) ?? [];
    const sum = Number(a) + Number(b);
    return { delayMs, choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: `\\boxed{${i === 0 ? sum : sum + 1}}` })) };
  };
}

/** With CLOTHO_RECORD_HISTORIES=1, writes a workflow's history among test/replay's committed histories. */
export async function recordHistory(file: string, workflowId: string): Promise<void> {
  if (process.env.CLOTHO_RECORD_HISTORIES !== '1') return;
  // Imported here: ./temporal.js registers vitest hooks, and the chaos harness and bench:atropos use this module outside vitest.
  const { testConnection } = await import('./temporal.js');
  const { client } = await testConnection();
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  await writeFile(new URL(`../replay/histories/${file}`, import.meta.url), historyToJSON(history));
}

/** The pids of a command's Python workers (its direct children): each leads a process group of its own. */
export function atroposWorkerPids(commandPid: number): number[] {
  const listed = execFileSync('ps', ['-o', 'pid=', '--ppid', String(commandPid)], { encoding: 'utf8' }).trim();
  return listed === '' ? [] : listed.split(/\s+/).map(Number);
}

/** The live processes of process group `pgid` (a Python worker and the pools it forked), zombies left out. */
export function processGroupPids(pgid: number): number[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,pgid=,stat='], { encoding: 'utf8' }).trim().split('\n');
  return rows
    .map((row) => row.trim().split(/\s+/))
    .filter(([, group, stat]) => Number(group) === pgid && !stat!.startsWith('Z'))
    .map(([pid]) => Number(pid));
}

/**
 * Resolves with `run`'s exit once it ends, or, after `ms`, SIGKILLs its Python workers' process groups (their pools
 * too) and the command and fails naming `what`: a hang fails the test rather than the suite's timeout.
 */
export async function endsWithin(run: CliRun, ms: number, what: string): Promise<number | string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  const ended = await Promise.race([run.exited, late]).finally(() => clearTimeout(timer));
  if (ended !== 'late') return ended;
  for (const pid of atroposWorkerPids(run.child.pid!)) process.kill(-pid, 'SIGKILL');
  run.child.kill('SIGKILL');
  throw new Error(`${what} did not end within ${ms / 1000} s; its output:\n${run.stdout()}\n${run.stderr()}`);
}
