/**
 * Multi-turn tool use through Clotho against a plain loop (issue 9 §6 and §4's storage point).
 *
 * 1. `--episodes` episodes of `--turns` turns, all at once, every inference call taking `--delay` ms and every turn
 *    but the last calling an instant tool: per-turn orchestration overhead over the same episodes driven by
 *    `runEpisode` (a plain in-process loop over the same server), the share of wall time outside inference of
 *    both, history events per episode and per turn, the Temporal server's requests per turn, and where an episode's
 *    time goes by its history. Both are timed after an untimed run of the same size (warm code, as in a long run).
 *    Then a long run of `--long-waves` times as many episodes through an inference server taking that many requests
 *    at once, with `--overlap` (a share) more episodes in flight, in both: the overhead per turn of a training run,
 *    where an episode's start and end overlap the other episodes' calls.
 * 2. `--storage-episodes` episodes of `--storage-turns` turns: bytes the trajectory store keeps per episode, beside
 *    what the scheme before per-turn deltas (the whole state every turn) stored for the same episode.
 *
 * Part 1 runs each placement (`--placement`: the default, every step local and turns in takeTurns; the queue, generation
 * and tool calls on their task queues; and `steps`, the path of runs started before takeTurns) at each number of
 * episodes at once (`--episodes`). Its first line is the CPU per turn of Clotho (workers and the Temporal server
 * together) against the plain loop's, and their ratio (issue 25).
 *
 * Run: npm run bench:tool-use [-- --episodes 64,16 --turns 20 --delay 200 --storage-episodes 4 --storage-turns 30 --placement default,queue
 *   --long-waves 3 --overlap 0.25]
 */
import { parseArgs } from 'node:util';
import type { ModelClient } from '../../src/env/define.js';
import { runEpisode, type AssistantTurn } from '../../src/env/episode.js';
import { loadEnvironmentData } from '../../src/env/loaded.js';
import { BaseEnvConfigSchema } from '../../src/config/schemas.js';
import { rolloutGroupId } from '../../src/workflows/messages.js';
import { startScriptedOpenAI } from '../../test/support/scripted-openai.js';
import {
  benchInference,
  PLACEMENTS,
  placementsOf,
  requestsBetween,
  startBenchTemporal,
  startBenchWorkers,
  type BenchTemporal,
  type BenchWorkerOptions,
  type BenchWorkers,
  type Placement,
} from '../support.js';
import { cpuStopwatch } from './cpu.js';
import { episodeOf, toolBenchEnv, toolCallingModel } from './environment.js';
import { logCalls, type RunLegs } from './legs.js';
import { meanHistory, readEpisodeHistory, type EpisodeHistory } from './history.js';
import { measureEpisodeStorage, PARTS, type EpisodeStorage } from './storage.js';

const { values } = parseArgs({
  options: {
    episodes: { type: 'string', default: '64,16' },
    turns: { type: 'string', default: '20' },
    delay: { type: 'string', default: '200' },
    'storage-episodes': { type: 'string', default: '4' },
    'storage-turns': { type: 'string', default: '30' },
    placement: { type: 'string', default: 'default,queue' },
    'long-waves': { type: 'string', default: '3' },
    overlap: { type: 'string', default: '0.25' },
  },
});
const EPISODES = values.episodes.split(',').filter(Boolean).map(Number);
if (EPISODES.some((n) => !Number.isInteger(n) || n < 1))
  throw new Error(`--episodes: expected whole numbers (comma-separated), got "${values.episodes}"`);
const TURNS = Number(values.turns);
const DELAY_MS = Number(values.delay);
const STORAGE_EPISODES = Number(values['storage-episodes']);
const STORAGE_TURNS = Number(values['storage-turns']);
const MODES = placementsOf(values.placement);
const LONG_WAVES = Number(values['long-waves']);
if (!Number.isInteger(LONG_WAVES) || LONG_WAVES < 0)
  throw new Error(`--long-waves: expected a whole number (0 leaves the long run out), got "${values['long-waves']}"`);
const OVERLAP = Number(values.overlap);
if (!(OVERLAP >= 0))
  throw new Error(
    `--overlap: expected the episodes in flight beyond the inference slots as a share of them (0.25), got "${values.overlap}"`,
  );
/** Completion-token budget of an episode: far above what the scripted calls use, so no episode ends by it. */
const TOKENS = 8192;

/** A run's wall time and the CPU time it took, here and in the dev server. */
interface Measured {
  wallMs: number;
  cpu: { selfMs: number; otherMs: number };
  legs: RunLegs;
}

/** Requests the Temporal server answered during the timed Clotho run, by operation. */
type Requests = ReturnType<typeof requestsBetween>;

const judge: ModelClient = { complete: () => Promise.reject(new Error('the tool bench has no judge')) };

async function main(): Promise<void> {
  const bench = await startBenchTemporal();
  try {
    const inferenceMs = TURNS * DELAY_MS;
    const outside = (wallMs: number) => `${(((wallMs - inferenceMs) / wallMs) * 100).toFixed(1)} %`;
    const n = (x: number) => Math.round(x).toLocaleString('en-US');
    console.log(`${TURNS} turns an episode, ${DELAY_MS} ms per inference call, an instant tool on every turn but the last`);
    for (const mode of MODES) {
      for (const episodes of EPISODES) {
        const { baseline, clotho, history, requests } = await overhead(bench, mode, episodes);
        const turns = episodes * TURNS;
        // CPU per turn: this process runs the scripted server as well, in both runs alike; Clotho's adds the dev server.
        const plainMs = baseline.cpu.selfMs / turns;
        const [workersMs, serverMs] = [clotho.cpu.selfMs / turns, clotho.cpu.otherMs / turns];
        console.log(`${mode}: ${PLACEMENTS[mode]}; ${episodes} episodes at once`);
        console.log(
          `  cpu per turn: clotho ${(workersMs + serverMs).toFixed(1)} ms, plain loop ${plainMs.toFixed(1)} ms, ratio ${((workersMs + serverMs) / plainMs).toFixed(2)}` +
            ` (clotho: ${workersMs.toFixed(1)} ms this process, workers and scripted server, + ${serverMs.toFixed(1)} ms Temporal dev server;` +
            ` plain loop: this process, scripted server included)`,
        );
        // All episodes run at once, so one episode's turns are the critical path of the whole wave, and the baseline
        // pays the same inference on it: the difference of the two walls over the turns is what Clotho adds per turn
        // of one episode.
        console.log(`  overhead per turn: ${((clotho.wallMs - baseline.wallMs) / TURNS).toFixed(1)} ms`);
        const [p, c] = [baseline.legs, clotho.legs];
        const ms = (x: number) => x.toFixed(1);
        console.log(
          `  where it goes (ms, plain loop / clotho): run start to an episode's first call ${ms(p.firstCall.meanMs)} / ${ms(c.firstCall.meanMs)} ` +
            `(the last episode's ${ms(p.firstCall.lastMs)} / ${ms(c.firstCall.lastMs)}); each turn beyond its call ${ms(p.turnMs)} / ${ms(c.turnMs)}; ` +
            `last answer to the run's end ${ms(p.endMs)} / ${ms(c.endMs)}`,
        );
        console.log(
          `  history events per turn: ${(history.events / TURNS).toFixed(2)} (${n(history.events)} an episode` +
            (history.bytes === undefined ? '' : `, ${n(history.bytes)} bytes`) +
            `); server round trips per turn: ${(history.roundTrips / TURNS).toFixed(2)} of the episode's own (its history's workflow and activity tasks)`,
        );
        const byOperation = Object.entries(requests.byOperation)
          .sort((a, b) => b[1] - a[1])
          .map(([op, k]) => `${op} ${(k / turns).toFixed(2)}`);
        console.log(`  all requests per turn: ${(requests.total / turns).toFixed(2)} (${byOperation.join(', ')})`);
        console.log(
          `  wall: plain loop ${(baseline.wallMs / 1000).toFixed(2)} s, clotho ${(clotho.wallMs / 1000).toFixed(2)} s, for ${(inferenceMs / 1000).toFixed(2)} s of inference; ` +
            `outside inference ${outside(baseline.wallMs)} and ${outside(clotho.wallMs)}`,
        );
        console.log(
          `  an episode's time by its history (mean, ms per turn; episode ${(history.wallMs / 1000).toFixed(2)} s first event to last):`,
        );
        let inActivities = 0;
        for (const [name, t] of Object.entries(history.activities)) {
          inActivities += t.queueMs + t.runMs;
          console.log(
            `    ${name.padEnd(14)} ×${t.count.toFixed(0).padStart(3)}: queued ${(t.queueMs / TURNS).toFixed(1)}, running ${(t.runMs / TURNS).toFixed(1)}`,
          );
        }
        console.log(`    between activities (workflow tasks, local activities): ${((history.wallMs - inActivities) / TURNS).toFixed(1)}`);
        if (LONG_WAVES > 0) {
          const long = await longRun(bench, mode, episodes);
          console.log(
            `  a long run, ${long.episodes} episodes through ${episodes} inference slots (num_max_requests_at_once) with ${long.inFlight} in flight, ` +
              `in both: overhead per turn ${((long.clothoMs - long.plainMs) / (LONG_WAVES * TURNS)).toFixed(1)} ms ` +
              `(wall: plain loop ${(long.plainMs / 1000).toFixed(2)} s, clotho ${(long.clothoMs / 1000).toFixed(2)} s, for ${((LONG_WAVES * inferenceMs) / 1000).toFixed(2)} s of inference a slot)`,
          );
        }
      }
    }

    const storage = await storagePerEpisode(bench);
    const { total, whole, records, bytes, wholeState, wholeCheckpoints } = storage;
    console.log(
      `trajectory store per ${STORAGE_TURNS}-turn episode (mean of ${STORAGE_EPISODES}): ${n(total)} bytes in ${n(records)} records`,
    );
    console.log(`  group state as per-turn deltas: ${n(bytes.state)}; the whole state every turn would be ${n(wholeState)}`);
    console.log(`  completion checkpoints: ${n(bytes.checkpoints)}; with the whole prompt's ids every turn ${n(wholeCheckpoints)}`);
    console.log(`  tool-call records: ${n(bytes.tools)}; parsed answer and assembled group: ${n(bytes.other)}`);
    console.log(`  the whole-state-every-turn scheme would store ${n(whole)} bytes (${(whole / total).toFixed(1)} ×)`);
  } finally {
    await bench.close();
  }
}

/** Runs the same episodes in a plain loop and through Clotho; the walls and the mean rollout-group history. */
async function overhead(
  bench: BenchTemporal,
  mode: Placement,
  episodes: number,
): Promise<{ baseline: Measured; clotho: Measured; history: EpisodeHistory; requests: Requests }> {
  const log = logCalls(toolCallingModel(TURNS, DELAY_MS), DELAY_MS, episodeOf);
  const server = await startScriptedOpenAI({ responder: log.responder });
  try {
    // Each run is timed after an untimed one of the same size: what a long training run pays per turn once the JIT has
    // compiled its paths, not their compilation (after a warm-up of 4 episodes, about a fifth of Clotho's CPU).
    await plainLoop(server.baseUrl, episodes);
    log.clear();
    const baselineCpu = cpuStopwatch(bench.serverPid);
    const baselineMs = await plainLoop(server.baseUrl, episodes);
    const baseline = { wallMs: baselineMs, cpu: baselineCpu(), legs: log.legs(performance.now(), baselineMs) };
    const workers = await toolWorkers(bench, server.baseUrl, mode, { llmConcurrency: episodes });
    try {
      await workers.run(episodes, episodes);
      const calls = server.calls;
      log.clear();
      const clothoCpu = cpuStopwatch(bench.serverPid);
      const before = await bench.serverRequests();
      const run = await workers.run(episodes, episodes);
      const clotho = { wallMs: run.wallMs, cpu: clothoCpu(), legs: log.legs(performance.now(), run.wallMs) };
      const requests = requestsBetween(before, await bench.serverRequests());
      if (server.calls - calls !== episodes * TURNS)
        throw new Error(`expected ${episodes * TURNS} inference calls, saw ${server.calls - calls}`);
      const ids = Array.from({ length: episodes }, (_, i) => rolloutGroupId(run.runId, toolBenchEnv.name, i));
      const histories = await Promise.all(ids.map((id) => readEpisodeHistory(bench.client, id)));
      return { baseline, clotho, history: meanHistory(histories), requests };
    } finally {
      await workers.shutdown();
    }
  } finally {
    await server.close();
  }
}

/** Bench workers for the tool bench's episodes (one trajectory a group, `TURNS` turns) in `mode`. */
function toolWorkers(
  bench: BenchTemporal,
  baseUrl: string,
  mode: Placement,
  o: Pick<BenchWorkerOptions, 'llmConcurrency' | 'requestsAtOnce'>,
): Promise<BenchWorkers> {
  return startBenchWorkers(bench, {
    baseUrl,
    environment: toolBenchEnv,
    groupSize: 1,
    tokens: TOKENS,
    maxTurns: TURNS,
    placement: mode,
    ...o,
  });
}

/**
 * A long run as training runs one: `LONG_WAVES` × `slots` episodes through an inference server that takes `slots`
 * requests at once, with a share (`--overlap`) more episodes in flight than slots, so that an episode's start and end
 * overlap the others' calls. The plain loop runs the same episodes through the same slots and lanes. Each timed after
 * an untimed run of the same size.
 */
async function longRun(bench: BenchTemporal, mode: Placement, slots: number) {
  const episodes = slots * LONG_WAVES;
  const inFlight = slots + Math.ceil(slots * OVERLAP);
  const server = await startScriptedOpenAI({ responder: toolCallingModel(TURNS, DELAY_MS) });
  try {
    const plain = () => plainLoop(server.baseUrl, episodes, { inFlight, requestsAtOnce: slots });
    await plain();
    const plainMs = await plain();
    const workers = await toolWorkers(bench, server.baseUrl, mode, { llmConcurrency: inFlight, requestsAtOnce: slots });
    try {
      await workers.run(episodes, inFlight);
      const { wallMs } = await workers.run(episodes, inFlight);
      return { episodes, inFlight, plainMs, clothoMs: wallMs };
    } finally {
      await workers.shutdown();
    }
  } finally {
    await server.close();
  }
}

/**
 * The baseline: `count` episodes in this process, `inFlight` at once (all by default), `runEpisode` calling the server
 * directly each turn, or through a server manager taking `requestsAtOnce` requests at once.
 */
async function plainLoop(
  baseUrl: string,
  count: number,
  { inFlight = count, requestsAtOnce }: { inFlight?: number; requestsAtOnce?: number } = {},
): Promise<number> {
  const { inference, stop } = benchInference(baseUrl, { requestsAtOnce });
  const config = BaseEnvConfigSchema.parse({ group_size: 1, max_token_length: TOKENS, max_turns: TURNS });
  const environment = await loadEnvironmentData(toolBenchEnv, config);
  const turnOf: AssistantTurn = async (messages, tools) => {
    const request = { messages, n: 1, maxTokens: TOKENS, temperature: 1, topP: 1, ...(tools ? { tools } : {}) };
    const [completion] = await inference.generate(request);
    return { ...completion!.message, role: 'assistant', content: completion!.message.content ?? completion!.text };
  };
  const start = performance.now();
  // `inFlight` lanes, each running its next episode as the one before ends.
  const episodes: Awaited<ReturnType<typeof runEpisode>>[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      for (let itemIndex = next++; itemIndex < count; itemIndex = next++)
        episodes.push(await runEpisode(environment, turnOf, { itemIndex, maxTurns: TURNS, judge }));
    }),
  );
  const wallMs = performance.now() - start;
  stop();
  const wrong = episodes.filter((e) => e.turns !== TURNS || e.score !== 1).length;
  if (wrong > 0) throw new Error(`${wrong} plain-loop episodes did not take ${TURNS} turns and answer`);
  return wallMs;
}

/** Runs a few long episodes with instant inference and measures what each left in the store. */
async function storagePerEpisode(bench: BenchTemporal): Promise<EpisodeStorage & { total: number; whole: number }> {
  const server = await startScriptedOpenAI({ responder: toolCallingModel(STORAGE_TURNS, 0) });
  const workers = await startBenchWorkers(bench, {
    baseUrl: server.baseUrl,
    environment: toolBenchEnv,
    groupSize: 1,
    tokens: TOKENS,
    maxTurns: STORAGE_TURNS,
    llmConcurrency: STORAGE_EPISODES,
  });
  try {
    const { runId } = await workers.run(STORAGE_EPISODES, STORAGE_EPISODES);
    const all = await Promise.all(
      Array.from({ length: STORAGE_EPISODES }, (_, itemIndex) =>
        measureEpisodeStorage(workers.store, { runId, environment: toolBenchEnv.name, itemIndex }),
      ),
    );
    const mean = (f: (s: EpisodeStorage) => number) => all.reduce((a, s) => a + f(s), 0) / all.length;
    const bytes = Object.fromEntries(PARTS.map((p) => [p, mean((s) => s.bytes[p])])) as EpisodeStorage['bytes'];
    const total = PARTS.reduce((a, p) => a + bytes[p], 0);
    const wholeState = mean((s) => s.wholeState);
    const wholeCheckpoints = mean((s) => s.wholeCheckpoints);
    const whole = total - bytes.state - bytes.checkpoints + wholeState + wholeCheckpoints;
    return { records: mean((s) => s.records), bytes, wholeState, wholeCheckpoints, total, whole };
  } finally {
    await workers.shutdown();
    await server.close();
  }
}

await main();
