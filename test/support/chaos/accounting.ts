import type { Client } from '@temporalio/client';
import type { EnvRunResult } from '../../../src/schema/rollout.js';
import type { BatcherView } from '../../../src/schema/batcher.js';
import { STATUS } from '../../../src/workflows/search-attributes.js';
import { waitFor } from '../cli.js';
import { deliveries, type TrainerEvent } from './trainer-log.js';

/**
 * Where every rollout group of the run ended up. A group is started when its workflow exists (Temporal's
 * visibility, by ClothoRunId); it is then trained (in the trainer's log), dropped before delivery with a reason
 * (its ClothoStatus), failed (its workflow), dropped or waiting in the batcher (counted there), or lost.
 */
export interface Accounting {
  started: number;
  /** Distinct groups the trainer trained. */
  delivered: number;
  /** Dropped by the env-run before delivery, by reason (equal scores). */
  dropped: Record<string, number>;
  failed: number;
  /** Dropped by the batcher (stale, too long, trainer failed), by reason. */
  droppedByBatcher: Record<string, number>;
  /** Still in the batcher when the run ended: queued, in formed batches, or leased. */
  waiting: number;
  /** Groups trained in two different batches. */
  duplicates: number[];
  /** Batches trained again under a new lease (expected when a trainer dies between training and its ack). */
  redeliveries: { batch: string; times: number }[];
  refusedAcks: number;
  /** Started, and neither trained, dropped, failed nor waiting: items that are unaccounted for. */
  lost: number;
  lostItems: number[];
  /** Groups still running when the run ended (none once the env-run has completed). */
  running: number;
  /** Disagreements between the sources (the env-run's own counts, visibility, the trainer). */
  mismatches: string[];
}

/** The rollout groups of a run by item, as visibility lists them (waiting until it has caught up with the env-run). */
async function listGroups(client: Client, runId: string, expected: number) {
  let groups: { item: number; status: string; clothoStatus: string | undefined }[] = [];
  await waitFor(
    async () => {
      groups = [];
      for await (const info of client.workflow.list({ query: `ClothoRunId = "${runId}"` })) {
        const match = /\/item-(\d+)$/.exec(info.workflowId);
        if (!match) continue;
        groups.push({ item: Number(match[1]), status: info.status.name, clothoStatus: info.typedSearchAttributes.get(STATUS) });
      }
      // Visibility trails the workflows a little: wait for every group, each with its final status.
      return groups.length >= expected && groups.every((g) => g.status === 'RUNNING' || g.clothoStatus !== 'running');
    },
    30_000,
    `visibility to list ${expected} rollout groups of ${runId}`,
  ).catch(() => undefined);
  return groups;
}

export async function account(options: {
  client: Client;
  runId: string;
  envId: number;
  result: EnvRunResult | undefined;
  view: BatcherView | undefined;
  trainer: TrainerEvent[];
}): Promise<Accounting> {
  const { result, view } = options;
  const groups = await listGroups(options.client, options.runId, result?.nextItem ?? 0);
  const got = deliveries(options.trainer);
  const mismatches: string[] = [];

  const dropped: Record<string, number> = {};
  let failed = 0;
  let running = 0;
  const unexplained: number[] = [];
  for (const group of groups) {
    if (got.batchesByItem.has(group.item)) continue;
    if (group.status === 'FAILED' || group.clothoStatus === 'failed') failed++;
    else if (group.clothoStatus === 'dropped') dropped.scores_all_equal = (dropped.scores_all_equal ?? 0) + 1;
    else if (group.status === 'RUNNING') running++;
    else unexplained.push(group.item);
  }
  const started = new Set(groups.map((g) => g.item));
  const strays = [...got.batchesByItem.keys()].filter((item) => !started.has(item));
  if (strays.length > 0) mismatches.push(`trained groups that visibility does not list: items ${strays.join(', ')}`);
  if (got.unknown > 0) mismatches.push(`${got.unknown} trained groups the trainer could not name`);

  const counters = view?.metrics.counters.perEnv[String(options.envId)];
  const droppedByBatcher = Object.fromEntries(
    Object.entries(counters?.dropped ?? {}).filter(([reason, n]) => reason !== 'scores_all_equal' && n),
  );
  const batcherDrops = Object.values(droppedByBatcher).reduce((sum, n) => sum + (n ?? 0), 0);
  const leased = view ? view.metrics.leasedBatches : 0;
  // Leased batches hold one group each here (batch size = group size).
  const waiting = view ? view.metrics.waitingGroups + leased : 0;
  const lost = Math.max(0, unexplained.length - batcherDrops - waiting);

  if (result) {
    if (result.nextItem !== groups.length)
      mismatches.push(`the env-run started ${result.nextItem} groups, visibility lists ${groups.length}`);
    const envDropped = Object.values(result.dropped).reduce((sum, n) => sum + (n ?? 0), 0);
    if (envDropped !== (dropped.scores_all_equal ?? 0))
      mismatches.push(`the env-run dropped ${envDropped}, ClothoStatus says ${dropped.scores_all_equal ?? 0}`);
    if (result.failed !== failed) mismatches.push(`the env-run counts ${result.failed} failed groups, visibility ${failed}`);
  } else {
    mismatches.push('the env-run did not complete: its own counts are unknown');
  }
  // What the batcher took in went to the trainer, was dropped there, or waits there.
  if (counters && counters.received !== got.batchesByItem.size + batcherDrops + waiting) {
    mismatches.push(
      `the batcher received ${counters.received} groups of env ${options.envId}; the trainer trained ${got.batchesByItem.size}, ` +
        `the batcher dropped ${batcherDrops} and holds ${waiting}`,
    );
  }

  return {
    started: groups.length,
    delivered: got.batchesByItem.size,
    dropped,
    failed,
    droppedByBatcher: droppedByBatcher as Record<string, number>,
    waiting,
    duplicates: got.duplicates,
    redeliveries: got.redeliveries,
    refusedAcks: got.refusedAcks,
    lost,
    lostItems: lost > 0 ? unexplained : [],
    running,
    mismatches,
  };
}
