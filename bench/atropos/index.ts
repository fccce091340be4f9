/**
 * An Atropos environment under Atropos and under Clotho, side by side (issue 24): the same environment file
 * (clients/python-atropos/tests/envs/arithmetic_env.py, written as Atropos's are), the same Atropos flags, the same
 * scripted model server and the same trainer, run
 *
 * - A. as Atropos runs it: its `run-api` (atroposlib, from the pinned venv `--atropos` uses) and `python env.py serve`;
 * - B. under Clotho: `clotho api` (its batcher's worker inside) and `clotho serve --atropos env.py`, on a Temporal dev
 *   server.
 *
 * The trainer registers, asks for a first batch, and takes `--steps` batches as fast as they come. From the
 * `--warmup`-th batch to the last (the environment's start left out): groups per second, and CPU per group of each
 * stack's processes, whole process trees from /proc, the Temporal server included for B. The scripted model server
 * and the trainer live in this process; their CPU per group is printed apart. Each `--latency-ms` (a fixed delay of
 * every model call: 200 ms as a model might take; 0 shows what orchestration alone costs) runs A, then B.
 *
 * Run: npm run bench:atropos [-- --latency-ms 200,0 --steps 16 --warmup 4 --group-size 8 --batch-size 64 --workers 16]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { arithmeticResponder, ATROPOS_ENVS, atroposPython } from '../../test/support/atropos.js';
import { startScriptedOpenAI } from '../../test/support/scripted-openai.js';
import { ensureAtroposRunApi } from '../api/atropos.js';
import { perGroup, startBenchTemporal, type BenchTemporal } from '../support.js';
import { startAtroposStack, startClothoStack, type EnvLaunch, type Stack } from './stacks.js';
import { startTrainer, takeBatches, type Window } from './trainer.js';

const { values } = parseArgs({
  options: {
    'latency-ms': { type: 'string', default: '200,0' },
    steps: { type: 'string', default: '16' },
    warmup: { type: 'string', default: '4' },
    'group-size': { type: 'string', default: '8' },
    'batch-size': { type: 'string', default: '64' },
    workers: { type: 'string', default: '16' },
  },
});

/** A flag's value as a whole number of at least `min`, or an error naming the flag. */
function count(flag: keyof typeof values, min: number): number {
  const n = Number(values[flag]);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag}: expected a whole number of at least ${min}, got "${values[flag]}"`);
  return n;
}
const STEPS = count('steps', 2);
const WARMUP = count('warmup', 1);
const GROUP_SIZE = count('group-size', 2);
const BATCH_SIZE = count('batch-size', GROUP_SIZE);
const WORKERS = count('workers', 1);
const LATENCIES = values['latency-ms'].split(',').map((ms) => {
  if (!/^\d+$/.test(ms)) throw new Error(`--latency-ms: expected whole milliseconds, comma-separated, got "${ms}"`);
  return Number(ms);
});
if (WARMUP >= STEPS) throw new Error(`--warmup: expected fewer batches than --steps (${STEPS}), got ${WARMUP}`);
if (BATCH_SIZE % GROUP_SIZE !== 0) throw new Error(`--batch-size: expected a multiple of --group-size (${GROUP_SIZE}), got ${BATCH_SIZE}`);
/** The most a run may take before the bench gives up on it. */
const RUN_TIMEOUT_MS = 180_000;

/** One stack's figures at one latency. */
interface Figures {
  stack: Stack;
  window: Window;
}

/** Runs the trainer against a fresh stack of `start`, then stops the stack. */
async function measure(start: () => Promise<Stack>): Promise<Figures> {
  const stack = await start();
  try {
    await startTrainer(stack.url, BATCH_SIZE, STEPS);
    stack.startEnv();
    const window = await takeBatches(stack.url, {
      steps: STEPS,
      warmup: WARMUP,
      readCpu: () => stack.readCpu(),
      problem: () => stack.problem(),
      ...(stack.serverRequests ? { serverRequests: stack.serverRequests } : {}),
      timeoutMs: RUN_TIMEOUT_MS,
    });
    return { stack, window };
  } finally {
    await stack.stop();
  }
}

const rate = (f: Figures) => f.window.groups / f.window.seconds;
const cpuPerGroup = (f: Figures) => f.window.cpuMs.reduce((a, b) => a + b, 0) / f.window.groups;

function report(latencyMs: number, atropos: Figures, clotho: Figures): void {
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  const parts = (f: Figures) => f.stack.parts.map((part, i) => `${part} ${ms(f.window.cpuMs[i]! / f.window.groups)}`).join(', ');
  const row = (name: string, f: Figures) =>
    `  ${name.padEnd(32)}${rate(f).toFixed(1).padStart(8)}${ms(cpuPerGroup(f)).padStart(14)}   ${f.window.groups} groups in ${f.window.seconds.toFixed(1)} s; ${parts(f)}`;
  console.log(`model calls of ${latencyMs} ms`);
  console.log(`  ${''.padEnd(32)}${'groups/s'.padStart(8)}${'CPU/group'.padStart(14)}`);
  console.log(row('Atropos (run-api, env.py serve)', atropos));
  console.log(row('Clotho (api, serve --atropos)', clotho));
  const ratio = (pick: (f: Figures) => number) => (pick(clotho) / pick(atropos)).toFixed(2);
  console.log(`  ${'Clotho / Atropos'.padEnd(32)}${ratio(rate).padStart(8)}${ratio(cpuPerGroup).padStart(14)}`);
  const aside = (f: Figures) =>
    `${ms(f.window.selfCpuMs / f.window.groups)}, ${(f.window.emptyPolls / f.window.groups).toFixed(2)} empty polls`;
  console.log(`  not counted, per group: model server and trainer (this process) Atropos ${aside(atropos)}; Clotho ${aside(clotho)}`);
  const requests = clotho.window.requests;
  if (requests) {
    const groups = clotho.window.groups;
    console.log(
      `  Temporal server requests per group: ${(requests.total / groups).toFixed(1)} (${perGroup(requests.byOperation, groups)})`,
    );
  }
}

async function main(): Promise<void> {
  const installed = await ensureAtroposRunApi();
  if ('skipped' in installed) {
    console.log(`bench:atropos skipped: no Atropos venv (${installed.skipped})`);
    return;
  }
  const scratch = await mkdtemp(join(tmpdir(), 'clotho-bench-atropos-'));
  let temporal: BenchTemporal | undefined;
  try {
    const { python, tokenizer, env } = await atroposPython(scratch);
    temporal = await startBenchTemporal();
    const load = () =>
      loadavg()
        .map((x) => x.toFixed(2))
        .join(' ');
    console.log(
      `arithmetic_env.py: groups of ${GROUP_SIZE}, batches of ${BATCH_SIZE / GROUP_SIZE} groups, ${WORKERS} workers, ` +
        `${STEPS} trainer steps, measured after ${WARMUP}; load average ${load()}`,
    );
    for (const latencyMs of LATENCIES) {
      const model = await startScriptedOpenAI({ responder: arithmeticResponder(latencyMs) });
      try {
        const launch: EnvLaunch = {
          python,
          env,
          envFile: join(ATROPOS_ENVS, 'arithmetic_env.py'),
          scratch,
          atroposFlags: [
            ...['--env.tokenizer_name', tokenizer, '--env.group_size', String(GROUP_SIZE)],
            ...['--env.max_num_workers', String(WORKERS), '--env.total_steps', String(STEPS), '--env.steps_per_eval', '0'],
            ...['--openai.base_url', model.baseUrl, '--openai.model_name', 'tiny', '--openai.api_key', 'x'],
          ],
        };
        const atropos = await measure(() => startAtroposStack(installed.runApi, launch));
        const clotho = await measure(() => startClothoStack(temporal!, launch));
        report(latencyMs, atropos, clotho);
      } finally {
        await model.close();
      }
    }
    console.log(`load average ${load()}`);
  } finally {
    await temporal?.close();
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
