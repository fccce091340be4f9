import { isGrpcServiceError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { completeLines, type DeliverToJsonlInput } from '../activities/trajectories.js';
import { ConfigError } from '../config/config-error.js';
import { jsonlLine } from '../schema/float-json.js';
import type { StoreRef } from '../schema/rollout.js';
import { storeLabel } from '../store/open-store.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import type { CommandIo } from './io.js';
import { resumeCommand } from './resume-command.js';

/** gRPC's NOT_FOUND status code: what reading the history of a workflow that does not exist answers. */
const NOT_FOUND = 5;

/** What a `process` run has written to its JSONL: the file its env-run delivers to, and each delivery in order. */
export interface RunOutput {
  path: string;
  deliveries: { firstLine: number; groups: StoreRef[] }[];
}

/**
 * A run's JSONL as its env-run's history says (every run of its continue-as-new chain): the file the env-run was
 * started with, and every delivery it scheduled, in line order (the last one may not have been written yet).
 * Undefined when the run has no env-run yet, or one that delivers to the batcher.
 */
export async function runOutput(client: Client, workflowId: string): Promise<RunOutput | undefined> {
  const converter = client.options.loadedDataConverter.payloadConverter;
  const decode = (payloads: { payloads?: unknown[] | null } | null | undefined) =>
    payloads?.payloads?.[0] ? converter.fromPayload(payloads.payloads[0] as never) : undefined;
  let path: string | undefined;
  const deliveries: RunOutput['deliveries'] = [];
  for (let runId: string | undefined; ;) {
    const history = await client.workflow
      .getHandle(workflowId, runId)
      .fetchHistory()
      .catch((error: unknown) => {
        const missing = error instanceof WorkflowNotFoundError || (isGrpcServiceError(error) && error.code === NOT_FOUND);
        if (missing && runId === undefined) return undefined;
        throw error;
      });
    if (!history) return undefined;
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    if (path === undefined) {
      const sink = (decode(started?.input) as { sink?: { kind?: string; path?: string } } | undefined)?.sink;
      if (sink?.kind !== 'jsonl' || typeof sink.path !== 'string') return undefined;
      path = sink.path;
    }
    for (const event of history.events ?? []) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name !== 'deliverToJsonl') continue;
      const { firstLine, groups } = decode(scheduled.input) as DeliverToJsonlInput;
      deliveries.push({ firstLine, groups });
    }
    runId = started?.continuedExecutionRunId || undefined;
    if (!runId) break;
  }
  return { path, deliveries: deliveries.sort((a, b) => a.firstLine - b.firstLine) };
}

/** How many lines the run's file must have: every delivery but the last written, and the last not yet or whole. */
function expectedLines({ deliveries }: RunOutput): { least: number; most: number } {
  const last = deliveries.at(-1);
  return last ? { least: last.firstLine, most: last.firstLine + last.groups.length } : { least: 0, most: 0 };
}

/** Writes the run's JSONL again from the store: every group it delivered, in the order delivered. Answers how many. */
async function rebuild(output: RunOutput, store: TrajectoryStore): Promise<number> {
  const refs: StoreRef[] = [];
  for (const { firstLine, groups } of output.deliveries) groups.forEach((ref, i) => (refs[firstLine + i] = ref));
  const lines: string[] = [];
  for (const [i, ref] of refs.entries()) {
    if (!ref) throw new Error(`the run's history has no delivery of line ${i} of ${output.path}`);
    lines.push(`${jsonlLine(await store.get(ref))}\n`);
  }
  await mkdir(dirname(output.path), { recursive: true });
  const building = `${output.path}.rebuilding`;
  await writeFile(building, lines.join(''));
  await rename(building, output.path);
  return lines.length;
}

/**
 * Before a resumed `process` run's workers poll: the JSONL its env-run writes (the header names it, whatever this
 * command's flags say), checked against what the run delivered. A file changed or deleted since is refused, naming
 * `--rebuild-output`; with it, the file is written again from the store. Undefined when the run has no JSONL yet.
 */
export async function settleRunOutput(options: {
  client: Client;
  store: TrajectoryStore;
  runId: string;
  workflowId: string;
  rebuildOutput: boolean;
  io: CommandIo;
}): Promise<string | undefined> {
  const { client, store, runId, workflowId, rebuildOutput, io } = options;
  const output = await runOutput(client, workflowId);
  if (!output) {
    if (rebuildOutput) throw new ConfigError([`--rebuild-output: run ${runId} has written no JSONL to rebuild`]);
    return undefined;
  }
  if (rebuildOutput) {
    io.out(`rebuilt ${output.path}: ${await rebuild(output, store)} groups from the trajectory store`);
    return output.path;
  }
  const lines = await completeLines(output.path);
  const { least, most } = expectedLines(output);
  if (lines < least || lines > most) {
    const delivered = least === most ? `${least}` : `${least} to ${most}`;
    throw new ConfigError([
      `${output.path} has ${lines} groups where run ${runId} delivered ${delivered}: it was changed or deleted. ` +
        `--rebuild-output writes the run's groups to it again from the trajectory store ${storeLabel(store)}, and the run goes on`,
    ]);
  }
  return output.path;
}

/** The run's JSONL was changed or deleted while it ran: its delivery waits (retried) for the file to be rebuilt. */
export class OutputChanged extends Error {
  override name = 'OutputChanged';
}

/** Says what happened to the JSONL and prints the command that resumes the run, rebuilding it; the exit code. */
export function reportOutputChanged(error: OutputChanged, command: string, argv: readonly string[], runId: string, io: CommandIo): number {
  io.err(`clotho ${command}: ${error.message}`);
  io.err(`resume it, rebuilding the file from the trajectory store: ${resumeCommand(command, argv, runId, ['--rebuild-output'])}`);
  return 1;
}
