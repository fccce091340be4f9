import { describe, expect, it } from 'vitest';
import { chaosSeed } from '../support/chaos/prng.js';
import { ATROPOS_SHORT, SHORT } from '../support/chaos/profiles.js';
import { runChaos, type ChaosReport } from '../support/chaos/run.js';

/** What every chaos run must show: each kill recovered from, nothing lost or trained twice, its histories replaying. */
function expectSurvived(report: ChaosReport): void {
  const seed = `(seed ${report.seed}, files in ${report.dir})`;
  expect(report.stoppedEarly, `the chaos stopped early ${seed}`).toBeUndefined();
  expect(
    report.kills.filter((k) => k.recoveredAt === undefined).map((k) => `kill ${k.n}: ${k.target}`),
    `kills not recovered from ${seed}`,
  ).toEqual([]);
  expect(
    report.exits.map((e) => `${e.name}: ${e.code}`),
    `processes that exited on their own ${seed}`,
  ).toEqual([]);
  expect(report.endError, `the run did not end ${seed}`).toBeUndefined();
  expect(report.accounting?.lost, `groups lost ${seed}`).toBe(0);
  expect(report.accounting?.duplicates, `groups trained twice ${seed}`).toEqual([]);
  expect(
    report.replays.filter((r) => r.error).map((r) => `${r.label}: ${r.error}`),
    `histories that do not replay ${seed}`,
  ).toEqual([]);
  for (const workflow of ['env-run', 'batcher'])
    expect(
      report.replays.some((r) => r.label.startsWith(workflow)),
      `${workflow} replayed`,
    ).toBe(true);
  // Everything else (recoveries over their bound, env ids, accounting mismatches), each named.
  expect(report.problems, `${report.summary} ${seed}`).toEqual([]);
}

/**
 * Issue 8, points 6 and 7, the short version (the long one: `npm run test:chaos`). A `clotho serve gsm8k` run feeds
 * `clotho api` and a trainer that leases and acks, on a Temporal dev server of the test's own; the environment
 * process, the API, the trainer and the server are each killed -9 twice at random moments (the seed is printed:
 * rerun with CHAOS_SEED=<seed>) and restarted 1–3 s later, the environment process alternately as `clotho worker`
 * and as `clotho serve`. Every kill must be recovered from within its printed bound; at the end every group that
 * was started is trained exactly once (or dropped or failed with its reason), and the run's histories replay
 * against the current workflow code.
 */
describe('chaos: kill -9 of every process', () => {
  it('loses nothing, repeats nothing, recovers from every kill, and its histories replay', async () => {
    expectSurvived(await runChaos({ ...SHORT, seed: chaosSeed(), log: (line) => console.log(line) }));
  }, 330_000);
});

/**
 * Issue 24, point 7: the same for an Atropos environment (`clotho serve --atropos arithmetic_env.py`), whose Python
 * worker's process group is killed -9 twice while a group is mid-collect, its command coming back once as
 * `clotho serve --atropos … --env.run_id <run>` and once as `clotho worker --atropos … serve --env.run_id <run>`
 * (the order drawn from the seed). The long version: `CHAOS_ATROPOS=1 npm run test:chaos`.
 */
describe('chaos: kill -9 of the Atropos Python worker', () => {
  it('delivers every started group once, and recovers from each kill within its bound', async () => {
    const report = await runChaos({ ...ATROPOS_SHORT, seed: chaosSeed(), log: (line) => console.log(line) });
    expectSurvived(report);
    const a = report.accounting!;
    // arithmetic_env's groups are never declined or filtered here (the scripted model's samples score 1 and -1).
    expect({ failed: a.failed, dropped: a.dropped, batcherDropped: a.droppedByBatcher }).toEqual({
      failed: 0,
      dropped: {},
      batcherDropped: {},
    });
    expect(a.delivered, `every started group delivered (seed ${report.seed})`).toBe(a.started);
    expect(report.kills.map((k) => [k.target, k.modelCallsInFlight! > 0])).toEqual([
      ['env', true],
      ['env', true],
    ]);
    expect(new Set(report.kills.map((k) => k.mode))).toEqual(new Set(['serve', 'worker']));
  }, 330_000);
});
