/**
 * Worker memory (issue 12 §6): the resident set (VmRSS) of a worker process, run as its own process as
 * `clotho worker` runs, against a Temporal dev server and a scripted inference server.
 *
 * 1. In flight: `--in-flight` groups (default 1,000) held in flight at once by an inference server that answers no
 *    call until all of them wait on it; prints the RSS then, and its peak over `--hold-s` seconds more.
 * 2. Over a long run: `--groups` groups (default 10,000), `--run-in-flight` at once, answered after `--delay-ms`;
 *    reads the RSS every 250 ms and prints each tenth of the run's floor and peak, and the floors' growth from the
 *    second tenth on (flat: about zero).
 *
 * Run: npm run bench:memory [-- --in-flight 1000 --hold-s 10 --groups 10000 --run-in-flight 256 --delay-ms 50]
 * A short check: npm run bench:memory -- --in-flight 200 --groups 1000
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultStepConfigs, toStepOptions } from '../../src/config/steps.js';
import type { EnvRunInput } from '../../src/schema/rollout.js';
import { envRun } from '../../src/workflows/env-run.js';
import { startScriptedOpenAI } from '../../test/support/scripted-openai.js';
import { benchEnv, startBenchTemporal, type BenchTemporal } from '../support.js';
import { memoryBenchQueues, TOKENS } from './shape.js';

const { values } = parseArgs({
  options: {
    'in-flight': { type: 'string', default: '1000' },
    'hold-s': { type: 'string', default: '10' },
    groups: { type: 'string', default: '10000' },
    'run-in-flight': { type: 'string', default: '256' },
    'delay-ms': { type: 'string', default: '50' },
    'group-size': { type: 'string', default: '8' },
  },
});
const IN_FLIGHT = Number(values['in-flight']);
const HOLD_MS = Number(values['hold-s']) * 1000;
const GROUPS = Number(values.groups);
const RUN_IN_FLIGHT = Number(values['run-in-flight']);
const DELAY_MS = Number(values['delay-ms']);
const GROUP_SIZE = Number(values['group-size']);
const repoRoot = join(import.meta.dirname, '..', '..');
const MiB = 1024 * 1024;

/** VmRSS of a process, in bytes. */
async function rss(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status);
  if (!kb) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kb[1]) * 1024;
}

const mib = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for `check` with a deadline; `what` names it in the error. */
async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(200);
  }
}

/** Lines in a JSONL file, counted from where the last call stopped (the sink only grows). */
function lineCounter(path: string) {
  let offset = 0;
  let lines = 0;
  return async () => {
    const size = await stat(path).then(
      (s) => s.size,
      () => 0,
    );
    if (size > offset) {
      for await (const chunk of createReadStream(path, { start: offset, end: size - 1 })) {
        for (const byte of chunk as Buffer) if (byte === 10) lines++;
      }
      offset = size;
    }
    return lines;
  };
}

/** The worker process (`worker.ts`), started and waited for until it polls. */
async function startWorkerProcess(bench: BenchTemporal, baseUrl: string, prefix: string, llmConcurrency: number) {
  const store = await mkdtemp(join(bench.state, 'store-'));
  const args = [
    '--import',
    'tsx',
    join(repoRoot, 'bench', 'memory', 'worker.ts'),
    bench.address,
    store,
    baseUrl,
    prefix,
    String(GROUP_SIZE),
    String(llmConcurrency),
  ];
  const child: ChildProcess = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(() => output.includes('workers ready') || child.exitCode !== null, 120_000, 'the worker process to start');
  if (child.exitCode !== null) throw new Error(`worker process exited with ${child.exitCode}: ${output}`);
  return {
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** An env-run of `groups` groups of the bench environment on the worker process's queues. */
function envRunInput(prefix: string, runId: string, groups: number, maxInFlight: number, sinkPath: string, timeoutS: number): EnvRunInput {
  const queues = memoryBenchQueues(prefix);
  return {
    runId,
    environment: benchEnv.name,
    totalGroups: groups,
    maxInFlight,
    sink: { kind: 'jsonl', path: sinkPath },
    group: {
      groupSize: GROUP_SIZE,
      maxTurns: 1,
      maxTokenLength: TOKENS,
      sampling: { temperature: 1, topP: 1 },
      ensureScoresAreNotSame: false,
      teacherTopK: null,
      taskQueues: { llm: queues.llm, env: queues.env },
      steps: toStepOptions(defaultStepConfigs({ generate: timeoutS, teacher: timeoutS })),
      searchAttributes: true,
    },
  };
}

async function main(): Promise<void> {
  const bench = await startBenchTemporal();
  // Inference calls waiting right now: every group in flight has one (its group_size samples in one call). Until
  // `open` is called, calls wait for it; then each answers after DELAY_MS.
  let waiting = 0;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const model = await startScriptedOpenAI({
    responder: async (body) => {
      waiting++;
      await gate;
      await sleep(DELAY_MS);
      waiting--;
      return { choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: `answer ${i}` })) };
    },
  });
  const prefix = `memory-${Date.now()}`;
  const worker = await startWorkerProcess(bench, model.baseUrl, prefix, Math.max(IN_FLIGHT, RUN_IN_FLIGHT));
  try {
    const idle = await rss(worker.pid);
    console.log(
      `worker process ${worker.pid}, idle after start: ${mib(idle)}   (uptime load: ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')})`,
    );

    // 1. IN_FLIGHT groups at once, all waiting on inference.
    let peak = idle;
    const sampler = setInterval(
      () =>
        void rss(worker.pid).then(
          (r) => (peak = Math.max(peak, r)),
          () => undefined,
        ),
      250,
    );
    try {
      const sink = join(bench.state, 'in-flight.jsonl');
      const started = performance.now();
      const run = bench.client.workflow.execute(envRun, {
        taskQueue: memoryBenchQueues(prefix).workflows,
        workflowId: `${prefix}-in-flight`,
        args: [envRunInput(prefix, `${prefix}-in-flight`, IN_FLIGHT, IN_FLIGHT, sink, 3600)],
      });
      await waitFor(() => waiting >= IN_FLIGHT, 1_800_000, `${IN_FLIGHT} groups in flight`);
      const reached = (performance.now() - started) / 1000;
      const inFlight = await rss(worker.pid);
      await sleep(HOLD_MS);
      open();
      const result = await run;
      if (result.delivered !== IN_FLIGHT) throw new Error(`delivered ${result.delivered} of ${IN_FLIGHT}: ${JSON.stringify(result)}`);
      console.log(
        `${IN_FLIGHT} groups of ${GROUP_SIZE} in flight (all waiting on inference, reached in ${reached.toFixed(0)} s): ${mib(inFlight)}   peak over the run: ${mib(peak)}   (target ≤ 1024 MiB)`,
      );
    } finally {
      clearInterval(sampler);
    }

    // 2. A long run; RSS read as each tenth of it is delivered.
    const sink = join(bench.state, 'run.jsonl');
    const delivered = lineCounter(sink);
    const started = performance.now();
    const run = bench.client.workflow.execute(envRun, {
      taskQueue: memoryBenchQueues(prefix).workflows,
      workflowId: `${prefix}-run`,
      args: [envRunInput(prefix, `${prefix}-run`, GROUPS, RUN_IN_FLIGHT, sink, 600)],
    });
    let finished = false;
    void run.finally(() => (finished = true)).catch(() => undefined);
    // RSS swings by 100-200 MiB with the collector's rhythm (a reading per tenth gave slopes of 2 to 21 MiB per 1,000
    // groups from run to run): it is read every 250 ms, and each tenth's lowest reading (its floor, just after a
    // collection) is what a leak would raise; its highest is the peak the machine must have.
    const tenths: { groups: number; floor: number; peak: number; s: number }[] = [];
    const step = Math.max(1, Math.floor(GROUPS / 10));
    let current = { floor: Infinity, peak: 0 };
    let next = step;
    for (;;) {
      const [done, now] = await Promise.all([delivered(), rss(worker.pid)]);
      current = { floor: Math.min(current.floor, now), peak: Math.max(current.peak, now) };
      if (done >= next || finished) {
        tenths.push({ groups: done, ...current, s: (performance.now() - started) / 1000 });
        current = { floor: Infinity, peak: 0 };
        while (next <= done) next += step;
        if (finished) break;
      }
      await sleep(250);
    }
    const result = await run;
    if (result.delivered !== GROUPS) throw new Error(`delivered ${result.delivered} of ${GROUPS}: ${JSON.stringify(result)}`);
    console.log(
      `${GROUPS} groups, ${RUN_IN_FLIGHT} in flight, inference ${DELAY_MS} ms: ${(GROUPS / ((performance.now() - started) / 1000)).toFixed(1)} groups/s`,
    );
    const row = (label: string, values: number[]) =>
      console.log(`  ${label.padEnd(18)}${values.map((v) => String(v).padStart(7)).join('')}`);
    row(
      'delivered',
      tenths.map((t) => t.groups),
    );
    row(
      'RSS floor (MiB)',
      tenths.map((t) => Math.round(t.floor / MiB)),
    );
    row(
      'RSS peak (MiB)',
      tenths.map((t) => Math.round(t.peak / MiB)),
    );
    // After the first tenth (caches filling), a least-squares line through the floors: flat is about 0.
    const steady = tenths.slice(1);
    if (steady.length >= 2) {
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const gx = mean(steady.map((t) => t.groups));
      const fx = mean(steady.map((t) => t.floor));
      const slope = steady.reduce((a, t) => a + (t.groups - gx) * (t.floor - fx), 0) / steady.reduce((a, t) => a + (t.groups - gx) ** 2, 0);
      const spread = Math.max(...steady.map((t) => t.floor)) - Math.min(...steady.map((t) => t.floor));
      console.log(
        `  from ${steady[0]!.groups} groups on: RSS floor ${((slope * 1000) / MiB).toFixed(1)} MiB per 1,000 groups (least squares), floors within ${mib(spread)}, peak ${mib(Math.max(...steady.map((t) => t.peak)))}`,
      );
    }
  } finally {
    await worker.stop();
    await model.close();
    await bench.close();
  }
}

await main();
