/**
 * Orchestration overhead of Clotho: what Temporal costs around inference (issue 12).
 *
 * 0. Temporal's floor: the CPU an empty child workflow per group costs (`floor-workflows.ts`: a parent keeping
 *    `--concurrency` children in flight, each returning at once), which bounds what part 1's CPU per group can come
 *    down to while each group is a workflow. Part 1's CPU per group is then split into the floor, the direct calls and
 *    what is left, Clotho's own.
 * 1. Groups per second end to end (8 samples × 256 tokens per group) against a server that answers at once,
 *    divided by the groups per second of calling that same server directly at the same concurrency; with what a
 *    group costs the Temporal server (requests by operation, CPU) and this process (workers, CPU), and its history.
 * 2. With every inference call taking 2 s, the share of wall time outside inference at `--in-flight` groups at once
 *    (32 and 256), in steady state: over `--waves` waves, the calls started per second from the second wave to the
 *    last (each wave's mean start time), against the in-flight/2 s an orchestrator that cost nothing would start.
 *    Then again with the inference server taking that many requests at once (`num_max_requests_at_once`, the server
 *    manager's slots) and `--overlap` (a share) more groups in flight than slots: a group's start, first workflow task
 *    and preparation overlap the calls of the groups before it, and a freed slot goes to a group already waiting.

 * Parts 1 and 2 are measured in each placement (`--placement`: the default, every step local, a group one takeTurns; the queue,
 * generation on the LLM queue), each on fresh workers.
 *
 * What bounds them on a given machine is printed beside them: the cores that part 1's ratio of 0.5 would take at the
 * CPU per group measured (the dev server's, and this process's, which holds the scripted server the direct calls use
 * too), and for part 2 the cores busy on average and in the busiest tenth of 100 ms windows, with the legs of a
 * steady-state group's cycle from its histories: groups that start and finish together queue for the CPU together.
 *
 * Run: npm run bench:orchestration [-- --groups 200 --concurrency 32 --in-flight 32,256 --waves 6 --placement default,queue --overlap 0.25]
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { rolloutGroupId } from '../../src/workflows/messages.js';
import { startScriptedOpenAI, type Responder } from '../../test/support/scripted-openai.js';
import { readEpisodeHistory } from '../tool-use/history.js';
import { coresSampler, cpuStopwatch } from '../tool-use/cpu.js';
import { CYCLE_LEGS, readCycles } from './cycle.js';
import { measureFloor } from './floor.js';
import {
  benchEnv,
  benchInference,
  benchMessages,
  PLACEMENTS,
  placementsOf,
  perGroup,
  requestsBetween,
  startBenchTemporal,
  startBenchWorkers,
  workflowRuns,
  type BenchTemporal,
  type Placement,
} from '../support.js';

const { values } = parseArgs({
  options: {
    groups: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '32' },
    'in-flight': { type: 'string', default: '32,256' },
    waves: { type: 'string', default: '6' },
    placement: { type: 'string', default: 'default,queue' },
    overlap: { type: 'string', default: '0.25' },
  },
});
const GROUPS = Number(values.groups);
const CONCURRENCY = Number(values.concurrency);
const IN_FLIGHT = values['in-flight'].split(',').filter(Boolean).map(Number);
const WAVES = Number(values.waves);
if (!Number.isInteger(WAVES) || WAVES < 3)
  throw new Error(
    `--waves: expected a whole number of at least 3 (a first and a last wave around the steady state), got "${values.waves}"`,
  );
const MODES = placementsOf(values.placement);
const OVERLAP = Number(values.overlap);
if (!(OVERLAP >= 0))
  throw new Error(`--overlap: expected the groups started beyond the inference slots as a share of them (0.25), got "${values.overlap}"`);
const SAMPLES = 8;
const TOKENS = 256;
const SLOW_MS = 2000;
/** Rollout-group histories read per run for the events figure (they are all alike). */
const HISTORIES_READ = 16;
/** Steady-state groups whose cycles are read per slow run. */
const CYCLES_READ = 32;
const CORES = availableParallelism();
/** The item a bench prompt is for (the scripted server sees only the request). */
const ITEM = new RegExp(`^${benchMessages(0)[0]!.content.replace('0', '(\\d+)')}$`);

const answer =
  (delayMs: number): Responder =>
  (body) => ({
    delayMs,
    choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({
      text: 'x',
      tokenIds: Array.from({ length: TOKENS }, (_, t) => 1000 + ((t + i) % 3000)),
      logprobs: Array.from({ length: TOKENS }, () => -0.5),
    })),
  });

async function main(): Promise<void> {
  const bench = await startBenchTemporal();
  try {
    const fast = await startScriptedOpenAI({ responder: answer(0) });
    const { inference } = benchInference(fast.baseUrl);
    const request = {
      messages: [{ role: 'user', content: 'item 0: say something' }],
      n: SAMPLES,
      maxTokens: TOKENS,
      temperature: 1,
      topP: 1,
    };

    // Baseline: the same calls, straight to the server, at the same concurrency.
    const directStart = performance.now();
    const directCpu = cpuStopwatch(bench.serverPid);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < GROUPS) await inference.generate(request);
      }),
    );
    const directRate = GROUPS / ((performance.now() - directStart) / 1000);
    const directCpuMs = directCpu().selfMs / GROUPS;
    const n = (x: number, digits = 1) => x.toFixed(digits);
    console.log(`groups: ${GROUPS} × ${SAMPLES} samples × ${TOKENS} tokens, ${CONCURRENCY} groups in flight, instant inference`);
    console.log(`direct inference calls:   ${n(directRate)} groups/s, ${n(directCpuMs)} ms CPU per group (client and scripted server)`);
    const cpuPerGroup = new Map<Placement, number>();
    for (const mode of MODES) {
      const instant = await measureInstant(bench, fast.baseUrl, mode);
      const clothoRate = GROUPS / (instant.wallMs / 1000);
      const [serverMs, selfMs] = [instant.cpu.otherMs / GROUPS, instant.cpu.selfMs / GROUPS];
      cpuPerGroup.set(mode, serverMs + selfMs);
      console.log(`${mode}: ${PLACEMENTS[mode]}`);
      console.log(
        `  cpu per group: clotho ${n(serverMs + selfMs)} ms all in (${n(serverMs)} ms Temporal dev server + ${n(selfMs)} ms this process: ` +
          `workers, client, scripted server), the direct calls ${n(directCpuMs)} ms; history events ${n(instant.groupEvents)} in the group + ` +
          `${n(instant.parentEvents)} in the env-run`,
      );
      console.log(`  clotho end to end:      ${n(clothoRate)} groups/s`);
      console.log(`  ratio clotho / direct:  ${n(clothoRate / directRate, 3)}`);
      console.log(
        `  server round trips: ${n(instant.groupRoundTrips)} of the rollout group's own (its history's workflow and activity tasks); ` +
          `all requests ${n(instant.requests.total / GROUPS)} with the env-run's (${perGroup(instant.requests.byOperation, GROUPS)})`,
      );
      console.log(
        `  cores a ratio of 0.5 takes at this CPU per group: (${n(serverMs)} + ${n(selfMs)} ms) × ${n(directRate / 2)} groups/s = ` +
          `${n(((serverMs + selfMs) * directRate) / 2 / 1000, 2)} of this machine's ${CORES}`,
      );
    }
    await fast.close();
    const floor = await measureFloor(bench, GROUPS, CONCURRENCY);
    console.log(
      `temporal's floor: ${n(floor.serverMs + floor.selfMs)} ms CPU per group (${n(floor.serverMs)} ms dev server + ${n(floor.selfMs)} ms this process) ` +
        `for a child workflow that does nothing, ${CONCURRENCY} at once under one parent`,
    );
    // What a group costs beyond what any group costs: a workflow (the floor) and its inference call (the direct calls,
    // client and scripted server, both in this process as they are in Clotho's runs).
    for (const [mode, cpuMs] of cpuPerGroup) {
      const floorMs = floor.serverMs + floor.selfMs;
      console.log(
        `  ${mode}: clotho ${n(cpuMs)} ms = the floor ${n(floorMs)} + the direct calls ${n(directCpuMs)} + Clotho's own ${n(cpuMs - floorMs - directCpuMs)} ms per group`,
      );
    }

    for (const inFlight of IN_FLIGHT) {
      for (const mode of MODES) {
        for (const extra of OVERLAP > 0 ? [0, Math.ceil(inFlight * OVERLAP)] : [0]) {
          const slow = await measureSlow(bench, inFlight, mode, extra);
          const what =
            extra === 0
              ? `${inFlight} groups in flight`
              : `${inFlight} inference slots (num_max_requests_at_once) and ${inFlight + extra} groups in flight`;
          console.log(
            `2 s inference, ${what}, ${WAVES} waves (${inFlight * WAVES} groups), ${mode} placement: ` +
              `wall ${n(slow.wallMs / 1000, 2)} s for ${WAVES} × 2 s; steady state ${n(slow.rate)} calls/s of ${n(inFlight / (SLOW_MS / 1000))} ideal`,
          );
          console.log(
            `  share of wall time outside inference: steady state ${n(slow.outside * 100)} %, whole run ${n(slow.wholeOutside * 100)} %`,
          );
          console.log(
            `  cores busy (dev server and this process): ${n(slow.cores.mean, 2)} on average, ${n(slow.cores.p90, 2)} in the busiest tenth of 100 ms windows, of ${CORES}`,
          );
          // With more groups than slots, a group's cycle includes its wait for a slot: the legs say nothing then.
          if (extra > 0) continue;
          console.log(
            `  a steady-state group's cycle outside its 2 s call, mean of ${slow.cyclesRead} (ms): ` +
              Object.entries(CYCLE_LEGS)
                .map(([leg, what]) => `${what} ${n(slow.cycle[leg as keyof typeof CYCLE_LEGS], 0)}`)
                .join(', '),
          );
        }
      }
    }
  } finally {
    await bench.close();
  }
}

/** Groups with instant inference on warm workers: wall time, CPU, server requests, and events per group. */
async function measureInstant(bench: BenchTemporal, baseUrl: string, mode: Placement) {
  const workers = await startBenchWorkers(bench, {
    baseUrl,
    groupSize: SAMPLES,
    tokens: TOKENS,
    llmConcurrency: CONCURRENCY * 2,
    placement: mode,
  });
  try {
    await workers.run(CONCURRENCY, CONCURRENCY);
    const cpu = cpuStopwatch(bench.serverPid);
    const before = await bench.serverRequests();
    const run = await workers.run(GROUPS, CONCURRENCY);
    const requests = requestsBetween(before, await bench.serverRequests());
    const used = cpu();
    const read = Array.from({ length: Math.min(HISTORIES_READ, GROUPS) }, (_, i) =>
      readEpisodeHistory(bench.client, rolloutGroupId(run.runId, benchEnv.name, i)),
    );
    const histories = await Promise.all(read);
    const groupEvents = histories.reduce((a, h) => a + h.events, 0) / histories.length;
    const groupRoundTrips = histories.reduce((a, h) => a + h.roundTrips, 0) / histories.length;
    const parentEvents = (await workflowRuns(bench.client, run.runId)).reduce((a, r) => a + r.events, 0) / GROUPS;
    return { wallMs: run.wallMs, cpu: used, requests, groupEvents, groupRoundTrips, parentEvents };
  } finally {
    await workers.shutdown();
  }
}

/**
 * `WAVES` waves of `inFlight` groups with 2 s inference; with `extra` groups, `inFlight + extra` groups in flight and
 * `inFlight` requests at once. Every group makes one call, so a free orchestrator starts `inFlight` calls every 2 s. The steady-state rate is the calls of the waves between the second and the last over
 * the time between those waves' mean start times (the first wave's start and the last wave's tail left out). Means,
 * not first calls: a wave's calls spread out as it goes round, and its first call is the one that waited least.
 */
async function measureSlow(bench: BenchTemporal, inFlight: number, mode: Placement, extra: number) {
  const arrivals: number[] = [];
  const calledAt = new Map<number, number>();
  const slow = await startScriptedOpenAI({
    responder: (body, call) => {
      arrivals.push(performance.now());
      const item = ITEM.exec(String((body as { messages?: { content?: unknown }[] }).messages?.[0]?.content))?.[1];
      if (item !== undefined) calledAt.set(Number(item), Date.now());
      return answer(SLOW_MS)(body, call);
    },
  });
  const workers = await startBenchWorkers(bench, {
    baseUrl: slow.baseUrl,
    groupSize: SAMPLES,
    tokens: TOKENS,
    llmConcurrency: inFlight * 2,
    generateTimeoutS: 120,
    placement: mode,
    ...(extra > 0 ? { requestsAtOnce: inFlight } : {}),
  });
  try {
    const total = inFlight * WAVES;
    const cores = coresSampler(bench.serverPid);
    const { wallMs, runId } = await workers.run(total, inFlight + extra);
    const busy = cores();
    // The calls in order of arrival, `inFlight` at a time, are the waves.
    const waveMean = (wave: number) => arrivals.slice(wave * inFlight, (wave + 1) * inFlight).reduce((a, b) => a + b, 0) / inFlight;
    const rate = ((WAVES - 2) * inFlight) / ((waveMean(WAVES - 1) - waveMean(1)) / 1000);
    // Groups spread evenly over the waves between the first and the last.
    const steady = total - 2 * inFlight;
    const items = Array.from(
      { length: Math.min(CYCLES_READ, steady) },
      (_, i) => inFlight + Math.floor((i * steady) / Math.min(CYCLES_READ, steady)),
    );
    const cycle = await readCycles(bench.client, runId, benchEnv.name, items, calledAt, SLOW_MS);
    return {
      wallMs,
      rate,
      outside: 1 - rate / (inFlight / (SLOW_MS / 1000)),
      wholeOutside: (wallMs - WAVES * SLOW_MS) / wallMs,
      cores: busy,
      cycle,
      cyclesRead: items.length,
    };
  } finally {
    await workers.shutdown();
    await slow.close();
  }
}

await main();
