import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { envRunId } from '../../../src/cli/commands/process.js';
import type { EnvRunResult } from '../../../src/schema/rollout.js';
import { waitFor } from '../cli.js';
import { arithmeticResponder } from '../atropos.js';
import { GSM8K_TEST, gsm8kResponder } from '../gsm8k-model.js';
import { startScriptedOpenAI, type Responder } from '../scripted-openai.js';
import { account, type Accounting } from './accounting.js';
import { ATROPOS_ENVIRONMENT, prepareAtroposRun } from './atropos.js';
import { exportHistories, firstChildCompletedAfter, replayHistories, type ExportedHistory, type ReplayOutcome } from './histories.js';
import { runKills, type ChaosSchedule, type KillRecord } from './kills.js';
import { startMonitor, type Monitor } from './monitor.js';
import { createPrng } from './prng.js';
import { resetIncarnations, type ChaosSetup } from './processes.js';
import { recoveryBreakdown, recoveryTable, summaryLine, withinBound } from './report.js';
import { killAllTracked } from './supervisor.js';
import { readTrainerLog } from './trainer-log.js';
import { ChaosWorld, type UnexpectedExit } from './world.js';

/**
 * The chaos test (issue 8, points 6 and 7): a `clotho serve gsm8k` run feeding `clotho api` and a trainer that leases
 * and acks, on a dev server of its own; kill -9 of each process at random moments, each restarted; then the account of
 * every group, and a replay of the run's histories against the current workflow code. With `atropos`, the run is
 * `clotho serve --atropos arithmetic_env.py` (issue 24, point 7) and the environment process killed is its Python worker.
 */
export interface ChaosOptions {
  seed: number;
  /** Run Atropos's arithmetic_env.py under `clotho serve --atropos` rather than gsm8k. */
  atropos?: boolean;
  schedule: ChaosSchedule;
  /** Rollouts per group; also the trainer's batch size, so that every group is a batch of its own. */
  groupSize: number;
  /** The trainer's last step: the run's size in groups. */
  numSteps: number;
  maxBatchesOffpolicy: number;
  leaseSeconds: number;
  /** Model latency while kills go on (then none, so the rest of the run goes fast). */
  modelDelayMs: number;
  /** Seconds the run may take to finish and the trainer to drain the batcher after the last kill. */
  endTimeoutS: number;
  /** Rollout-group histories exported and replayed beside the env-run's and the batcher's. */
  rolloutHistories: number;
  /** Copies the env-run's and batcher's (first-run) histories there as env-run-chaos.json and batcher-chaos.json (atropos-…, with `atropos`). */
  recordHistoriesTo?: string;
  /** Keep the run's directory (logs, SQLite, histories) even when it passed. */
  keep?: boolean;
  log: (line: string) => void;
}

export interface ChaosReport {
  seed: number;
  dir: string;
  kills: KillRecord[];
  stoppedEarly?: string;
  /** Why the run did not end (the env-run stuck, the batcher not drained). */
  endError?: string;
  accounting?: Accounting;
  replays: ReplayOutcome[];
  exits: UnexpectedExit[];
  envIdChanges: number[];
  summary: string;
  /** Everything that went wrong, one line each; empty when the run passed. */
  problems: string[];
}

// Not test/support/temporal.ts's uniqueId: that module registers vitest hooks, and this one also runs outside vitest.
const uniqueId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${randomUUID().slice(0, 8)}`;

/** Some samples right, some wrong (scores differ); every tenth item all right, so a few groups are dropped (equal scores). */
const correct = (item: number, sample: number) => item % 10 === 9 || sample === 0;

export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const { log } = options;
  const prng = createPrng(options.seed);
  log(`chaos: seed ${options.seed} (rerun with CHAOS_SEED=${options.seed})`);
  resetIncarnations();
  const dir = await mkdtemp(join(tmpdir(), 'clotho-chaos-'));
  log(`chaos: logs, SQLite file and histories in ${dir}`);
  // Groups the run may start: the trainer's steps, those in flight at its end and those the batcher may hold.
  const items = options.numSteps + 8 * (options.maxBatchesOffpolicy + 1);
  const atropos = options.atropos ? await prepareAtroposRun(dir, items) : undefined;
  const pacing = { delayMs: options.modelDelayMs };
  const scripted = options.atropos ? arithmeticResponder() : gsm8kResponder(correct);
  // Calls waiting for their answer: an Atropos run's Python worker is killed while one is (mid-group).
  let callsInFlight = 0;
  const responder: Responder = async (body, call) => {
    const outcome = await scripted(body, call);
    if (!('choices' in outcome)) return outcome;
    callsInFlight++;
    await new Promise((resolve) => setTimeout(resolve, pacing.delayMs));
    callsInFlight--;
    return outcome;
  };
  const model = await startScriptedOpenAI({ responder });
  const setup: ChaosSetup = {
    dir,
    dbFile: join(dir, 'temporal.sqlite'),
    batcherId: uniqueId('chaos-batcher'),
    runId: uniqueId('chaos'),
    store: join(dir, 'store'),
    apiPort: 0,
    modelUrl: model.baseUrl,
    groupSize: options.groupSize,
    maxBatchesOffpolicy: options.maxBatchesOffpolicy,
    numSteps: options.numSteps,
    leaseSeconds: options.leaseSeconds,
    trainerLog: join(dir, 'trainer-events.jsonl'),
    environment: atropos ? ATROPOS_ENVIRONMENT : 'gsm8k',
    itemsFile: atropos?.itemsFile ?? GSM8K_TEST,
    ...(atropos ? { atropos: atropos.atropos } : {}),
  };
  const world = new ChaosWorld(setup, () => callsInFlight);
  const report: ChaosReport = {
    seed: options.seed,
    dir,
    kills: [],
    replays: [],
    exits: world.exits,
    envIdChanges: world.envIdChanges,
    summary: '',
    problems: [],
  };
  let connection: Connection | undefined;
  let monitor: Monitor | undefined;
  let histories: ExportedHistory[] = [];
  try {
    await world.startAll();
    connection = await Connection.connect({ address: world.address });
    const client = new Client({ connection });
    monitor = startMonitor({ client: () => client, batcherId: setup.batcherId, trainerLog: setup.trainerLog });
    await waitFor(() => monitor!.latest() !== undefined, 60_000, 'the batcher to answer queries');
    log(
      `chaos: run ${setup.runId} (env_id ${world.envId}) feeding ${setup.batcherId}; ${options.numSteps} steps, groups of ${options.groupSize}`,
    );

    const startedAt = Date.now();
    const chaos = await runKills({ world, monitor, prng, schedule: options.schedule, startedAt, pacing, log });
    report.kills = chaos.kills;
    if (chaos.stoppedEarly) report.stoppedEarly = chaos.stoppedEarly;

    const result = await awaitEnd(world, monitor, client, report, options.endTimeoutS);
    const view = monitor.latest()?.view;
    // Acks after each restart, for the table (the kill loop stops looking once its kill counts as recovered).
    for (const k of report.kills) if (k.restartAt) k.ackedAt ??= monitor.ackAfter(k.restartAt);
    const trainer = readTrainerLog(setup.trainerLog);
    if (trainer.unreadable > 0) report.problems.push(`${trainer.unreadable} unreadable lines in the trainer's log`);
    report.accounting = await account({ client, runId: setup.runId, envId: world.envId, result, view, trainer: trainer.events });

    // Point 7: export the run's histories and replay them against the current workflow code.
    const exported = await exportAndReplay(client, world, report, options.rolloutHistories);
    histories = exported.histories;
    const { inFlight } = exported;
    log(`chaos: recoveries (seed ${options.seed})\n${recoveryTable(report.kills)}`);
    const named = (name: string, id: string | undefined) =>
      id ? [{ name, events: histories.filter((h) => h.workflowId === id).flatMap((h) => h.history.events) }] : [];
    // The histories that had to move again: the batcher's after a kill of the API, the trainer or the server; the
    // env-run's and the first group it saw finish after the restart, after a kill of the environment process or the server.
    const envSide = (k: KillRecord) => [
      ...named('env-run', envRunId(setup.runId, setup.environment)),
      ...named(shortId(inFlight.get(k) ?? ''), inFlight.get(k)),
    ];
    const breakdowns = report.kills.map((k) =>
      recoveryBreakdown(
        k,
        [
          ...(k.target === 'env' ? [] : named('batcher', setup.batcherId)),
          ...(k.target === 'env' || k.target === 'temporal' ? envSide(k) : []),
        ],
        trainer.events,
      ),
    );
    log(`chaos: where each recovery's time went (seconds after the kill)\n${breakdowns.join('\n')}`);
    for (const r of report.replays) log(`chaos: replay ${r.label} (${r.events} events): ${r.error ?? 'ok'}`);
  } catch (error) {
    report.problems.push(`the chaos run broke off: ${(error as Error).stack ?? error}`);
  } finally {
    await monitor?.stop();
    await world.stopAll().catch(() => killAllTracked());
    killAllTracked();
    await model.close();
    await connection?.close();
  }

  report.problems.unshift(...problemsOf(report));
  report.summary = summaryLine(options.seed, report.accounting, report.kills, report.replays);
  log(report.summary);
  // Histories worth committing come from a run that passed.
  if (options.recordHistoriesTo && report.problems.length === 0)
    await recordHistories(histories, options.recordHistoriesTo, options.atropos ? 'atropos-' : '', log);
  if (report.problems.length > 0) log(`chaos: FAILED (seed ${options.seed}, files in ${dir}):\n- ${report.problems.join('\n- ')}`);
  else if (!options.keep) await rm(dir, { recursive: true, force: true });
  return report;
}

/**
 * The end of a run: it finishes at the trainer's last step (`clotho serve` exits then), and the trainer takes every
 * batch the batcher still holds. Returns the env-run's result; what did not happen goes to `report.endError`.
 */
async function awaitEnd(
  world: ChaosWorld,
  monitor: Monitor,
  client: Client,
  report: ChaosReport,
  timeoutS: number,
): Promise<EnvRunResult | undefined> {
  const handle = client.workflow.getHandle(envRunId(world.setup.runId, world.setup.environment));
  // A run already known to be broken gets a short wait: the report matters more than the rest of the run.
  const endTimeoutS = report.stoppedEarly ? Math.min(30, timeoutS) : timeoutS;
  const endBy = Date.now() + endTimeoutS * 1000;
  let result: EnvRunResult;
  try {
    result = await Promise.race([
      handle.result() as Promise<EnvRunResult>,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not within ${endTimeoutS} s`)), endTimeoutS * 1000).unref()),
    ]);
  } catch (error) {
    const description = await handle.describe().catch(() => undefined);
    const cause = (error as { cause?: Error }).cause?.message;
    report.endError = `the env-run did not complete after the last kill (status ${description?.status.name ?? 'unknown'}): ${(error as Error).message}${cause ? `: ${cause}` : ''}`;
    return undefined;
  }
  const completedAt = Date.now();
  if (world.envMode === 'serve') {
    world.expectExit(world.env);
    const code = await Promise.race([world.env.exited, new Promise((resolve) => setTimeout(resolve, 30_000, 'still running'))]);
    if (code !== 0) report.problems.push(`clotho serve ended with ${code} after its run completed:\n${world.env.tail(10)}`);
  }
  await waitFor(
    () => {
      const latest = monitor.latest();
      return (
        latest !== undefined &&
        latest.at > completedAt &&
        latest.view.metrics.waitingGroups === 0 &&
        latest.view.metrics.leasedBatches === 0
      );
    },
    Math.max(10_000, endBy - Date.now()),
    'the trainer to take every batch the batcher holds',
  ).catch((error: Error) => {
    report.endError = error.message;
  });
  return result;
}

/**
 * Exports the histories of the env-run, the batcher, `rollouts` groups spread over the run and the first group to
 * finish after each restart of the environment process or the server, and replays them all against the current
 * workflow code.
 */
async function exportAndReplay(client: Client, world: ChaosWorld, report: ChaosReport, rollouts: number) {
  const { runId, batcherId, dir, environment } = world.setup;
  const started = report.accounting?.started ?? 0;
  const picks = new Set(
    Array.from({ length: Math.min(rollouts, started) }, (_, i) => Math.round((i * (started - 1)) / Math.max(1, rollouts - 1))),
  );
  const workflows: Record<string, string> = { 'env-run': envRunId(runId, environment), batcher: batcherId };
  for (const item of picks) workflows[`rollout item-${item}`] = `clotho/${runId}/${environment}/item-${item}`;
  const histories: ExportedHistory[] = [];
  const inFlight = new Map<KillRecord, string>();
  try {
    histories.push(...(await exportHistories(client, world.address, join(dir, 'histories'), workflows)));
    const envRun = histories.filter((h) => h.label.startsWith('env-run')).flatMap((h) => h.history.events);
    for (const kill of report.kills.filter((k) => (k.target === 'env' || k.target === 'temporal') && k.restartAt)) {
      const id = firstChildCompletedAfter(envRun, kill.restartAt);
      if (id) inFlight.set(kill, id);
    }
    const more = [...new Set(inFlight.values())].filter((id) => !Object.values(workflows).includes(id));
    histories.push(
      ...(await exportHistories(
        client,
        world.address,
        join(dir, 'histories'),
        Object.fromEntries(more.map((id) => [`rollout ${shortId(id)}`, id])),
      )),
    );
    report.replays = await replayHistories(histories);
  } catch (error) {
    report.problems.push(`exporting or replaying histories failed: ${(error as Error).message}`);
  }
  return { histories, inFlight };
}

/** `item-12` of `clotho/<run>/<env>/item-12`. */
const shortId = (workflowId: string) => workflowId.replace(/^.*\//, '');

function problemsOf(report: ChaosReport): string[] {
  const problems: string[] = [];
  if (report.stoppedEarly) problems.push(`the chaos stopped early: ${report.stoppedEarly}`);
  for (const k of report.kills) {
    if (k.recoveredAt !== undefined && !withinBound(k)) {
      problems.push(
        `kill ${k.n} (${k.target}) recovered after ${((k.recoveredAt - k.killedAt) / 1000).toFixed(1)} s, over its bound of ${k.boundS.toFixed(1)} s`,
      );
    }
  }
  for (const k of report.kills.filter((k) => k.modelCallsInFlight === 0))
    problems.push(`kill ${k.n} (${k.target}) was not mid-group: no model call of the Python worker in flight within 10 s`);
  for (const exit of report.exits) problems.push(`${exit.name} exited on its own with ${exit.code}:\n${exit.tail}`);
  if (report.envIdChanges.length > 0)
    problems.push(`a restarted clotho serve registered as env ${report.envIdChanges.join(', ')}, not its first env id`);
  if (report.endError) problems.push(report.endError);
  const a = report.accounting;
  if (a) {
    if (a.lost > 0) {
      const where = report.endError ? ' (finished or running in an env-run that did not complete, never delivered)' : '';
      problems.push(`${a.lost} groups lost${where}: items ${a.lostItems.join(', ')}`);
    }
    if (a.duplicates.length > 0) problems.push(`groups trained in two different batches: items ${a.duplicates.join(', ')}`);
    for (const m of a.mismatches) problems.push(`accounting: ${m}`);
  }
  for (const r of report.replays) if (r.error) problems.push(`replay of ${r.label} (${r.file}) failed: ${r.error}`);
  return problems;
}

/** Keeps the first run of the env-run's and the batcher's histories as commit-ready files (compact JSON). */
async function recordHistories(histories: ExportedHistory[], dir: string, prefix: string, log: (line: string) => void): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, label] of [
    [`${prefix}env-run-chaos.json`, 'env-run'],
    [`${prefix}batcher-chaos.json`, 'batcher'],
  ] as const) {
    const first = histories.find((h) => h.label === label || h.label.startsWith(`${label} (run 1 `));
    if (!first) continue;
    // Compact: the CLI's indented JSON is a third larger, and these files are committed.
    await writeFile(join(dir, name), `${JSON.stringify(first.history)}\n`);
    log(`chaos: recorded ${first.label} (${first.history.events.length} events) as ${join(dir, name)}`);
  }
}
