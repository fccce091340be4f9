import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { parseArgs } from 'node:util';
import { ConfigError } from '../../config/config-error.js';
import { canFinish, CLOTHO_VERSION, finisherOf, REPLAY_BASELINE } from '../../version.js';
import { ENVIRONMENT } from '../../workflows/search-attributes.js';
import type { CommandIo } from '../io.js';
import { openTemporal } from '../runtime.js';
import { recordedVersion } from '../versions.js';

export const RUNS_USAGE = `Usage: clotho runs [--json]

Lists the open (running) Clotho runs of the Temporal namespace: env-runs (one per run and environment, an Atropos
environment's too) and batchers (one per training run of \`clotho api\`), each with the Clotho version that started
it and whether this Clotho can finish it. A run started by a version older than the replay baseline cannot be
resumed by this one: finish it with the version named (npm install clotho@<version>), or abandon it (temporal
workflow terminate), before upgrading (ARCHITECTURE.md, "Replay and patches").

Options:
  --json   one JSON object per run instead of the table

Connects to TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE) when set, otherwise to the local dev server.`;

/** One open run as `clotho runs` lists it. */
export interface OpenRun {
  workflowId: string;
  runId: string;
  environment: string | null;
  kind: 'env-run' | 'batcher';
  status: string;
  startedAt: string;
  /** The Clotho version that started it; null when it recorded none (Clotho 0.1.0 or older). */
  clothoVersion: string | null;
  /** Whether this Clotho can resume it; when not, the version that can. */
  canFinish: boolean;
  finishWith: string | null;
}

/** Env-runs (Clotho's and Atropos's) and batchers still running (workflow type and status are Temporal's own search attributes). */
const OPEN_RUNS = `ExecutionStatus = 'Running' AND WorkflowType IN ('envRun', 'atroposEnvRun', 'batcher')`;

/** The open runs of the namespace, oldest first; the version from the `ClothoVersion` attribute, else the memo. */
export async function openRuns(client: Client): Promise<OpenRun[]> {
  const runs: OpenRun[] = [];
  for await (const info of client.workflow.list({ query: OPEN_RUNS })) runs.push(openRun(info));
  return runs.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}

function openRun(info: WorkflowExecutionInfo): OpenRun {
  const version = recordedVersion(info);
  const kind = info.type === 'batcher' ? 'batcher' : 'env-run';
  // Env-run ids are clotho/<run>/<environment>; a batcher's id names its training run.
  const parts = info.workflowId.split('/');
  const byId = kind === 'env-run' && parts.length === 3 && parts[0] === 'clotho' ? { runId: parts[1]!, environment: parts[2]! } : null;
  const attribute = info.typedSearchAttributes?.get(ENVIRONMENT);
  const finishes = canFinish(version);
  return {
    workflowId: info.workflowId,
    runId: byId?.runId ?? info.workflowId,
    environment: typeof attribute === 'string' ? attribute : (byId?.environment ?? null),
    kind,
    status: info.status.name.toLowerCase(),
    startedAt: info.startTime.toISOString(),
    clothoVersion: version ?? null,
    canFinish: finishes,
    finishWith: finishes ? null : finisherOf(version),
  };
}

/** `clotho runs`: the open runs with their Clotho versions, and which ones this version can finish. */
export async function runsCommand(argv: string[], io: CommandIo): Promise<number> {
  let json: boolean;
  try {
    json = parseArgs({ args: argv, options: { json: { type: 'boolean', default: false } }, strict: true }).values.json ?? false;
  } catch (error) {
    throw new ConfigError([(error as Error).message]);
  }
  const temporal = await openTemporal();
  try {
    const runs = await openRuns(temporal.client);
    if (json) {
      for (const run of runs) io.out(JSON.stringify(run));
      return 0;
    }
    io.out(`Clotho ${CLOTHO_VERSION} finishes runs started by Clotho ${REPLAY_BASELINE} or later (its replay baseline).`);
    if (runs.length === 0) {
      io.out('no open runs');
      return 0;
    }
    const rows = runs.map((r) => [
      r.runId,
      r.environment ?? '-',
      r.kind,
      r.status,
      r.startedAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
      r.clothoVersion ?? 'none (≤ 0.1.0)',
      r.canFinish ? 'yes' : `no: finish with ${r.finishWith} (npm install clotho@${r.finishWith}) or abandon`,
    ]);
    const header = ['RUN', 'ENVIRONMENT', 'KIND', 'STATUS', 'STARTED', 'CLOTHO', 'CAN FINISH'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
    for (const row of [header, ...rows]) io.out(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
    return 0;
  } finally {
    await temporal.close();
  }
}
