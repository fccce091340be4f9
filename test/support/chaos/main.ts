// The long chaos test, one process per call: node --import tsx test/support/chaos/main.ts (scripts/chaos.mjs runs it
// for several seeds). Settings come from the environment, so that a failing seed is rerun exactly as it ran:
//   CHAOS_PROFILE=short  the short version's settings (default: the long one's)
//   CHAOS_ATROPOS=1    the Atropos run (clotho serve --atropos arithmetic_env.py; its Python worker is the env target)
//   CHAOS_SEED         the seed (default: a fresh one, printed)
//   CHAOS_KILLS        kills of each target (default 4)
//   CHAOS_TARGETS      which to kill, comma-separated: env,api,trainer,temporal (default all)
//   CHAOS_STEPS        the trainer's steps = groups in the run (default 400)
//   CHAOS_MODEL_DELAY_MS  model latency while the kills go on (default 800)
//   CHAOS_RECORD_HISTORIES=dir   keep the env-run's and batcher's histories there (env-run-chaos.json, batcher-chaos.json)
//   CHAOS_KEEP=1       keep the run's directory (logs, SQLite file, histories) even when it passed
import { chaosSeed } from './prng.js';
import { ATROPOS_LONG, ATROPOS_SHORT, LONG, SHORT, type ChaosProfile } from './profiles.js';
import { runChaos } from './run.js';
import { killAllTracked } from './supervisor.js';
import type { Target } from './world.js';

// Ctrl-C: the processes started (each in a group of its own, out of the terminal's reach) go too.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllTracked();
    process.exit(130);
  });
}

const number = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const short = process.env.CHAOS_PROFILE === 'short';
const base = process.env.CHAOS_ATROPOS === '1' ? (short ? ATROPOS_SHORT : ATROPOS_LONG) : short ? SHORT : LONG;
const profile: ChaosProfile = {
  ...base,
  numSteps: number('CHAOS_STEPS', base.numSteps),
  modelDelayMs: number('CHAOS_MODEL_DELAY_MS', base.modelDelayMs),
  schedule: {
    ...base.schedule,
    killsPerTarget: number('CHAOS_KILLS', base.schedule.killsPerTarget),
    ...(process.env.CHAOS_TARGETS ? { targets: process.env.CHAOS_TARGETS.split(',') as Target[] } : {}),
  },
};
const report = await runChaos({
  ...profile,
  seed: chaosSeed(),
  ...(process.env.CHAOS_RECORD_HISTORIES ? { recordHistoriesTo: process.env.CHAOS_RECORD_HISTORIES } : {}),
  keep: process.env.CHAOS_KEEP === '1',
  log: (line) => console.log(line),
});
process.exit(report.problems.length > 0 ? 1 : 0);
