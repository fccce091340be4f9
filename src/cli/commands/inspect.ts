import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { parseArgs } from 'node:util';
import { ConfigError } from '../../config/config-error.js';
import type { AtroposGroupResult } from '../../schema/atropos.js';
import type { GroupAddress } from '../../activities/group-state.js';
import type { RolloutGroupInput, RolloutGroupResult } from '../../schema/rollout.js';
import { openStore, storeLabel } from '../../store/open-store.js';
import { storeKey, type TrajectoryStore } from '../../store/trajectory-store.js';
import { rolloutGroupId } from '../../workflows/messages.js';
import { buildTimeline, type Timeline, type TimelineStep } from '../history-timeline.js';
import type { CommandIo } from '../io.js';
import { openTemporal } from '../runtime.js';
import { duration, formatEnd, formatSteps, harnessLines } from '../timeline-format.js';
import { HarnessProgressSchema } from '../../activities/harness.js';
import { readHarnessSample } from '../view/harness.js';
import { sampleLines } from '../group-summary.js';
import { runTokenizer } from '../decoded-tokens.js';
import { collectHeartbeatLines } from '../slow-collects.js';
import { ROLLOUT_GROUP_TYPES } from '../view/temporal.js';
import { stalledWorkflowTask, waitingIn, waitingText } from '../waiting-work.js';

export const INSPECT_USAGE = `Usage: clotho inspect <run id> <item> [--env <environment>] [--store <dir|url>]
       clotho inspect <workflow id>          (clotho/<run id>/<environment>/item-<i>)

Prints a rollout group's timeline from its workflow history: every step in order (prepare, generateTurn turn k, each
callTool with its tool, arguments and outcome, stepTurn, parse, judge, score, teacher, assemble; local activities
from their markers), when each started and how long it took, retries with the error of the failed attempt, what a
running group waits on (a retry, or the timeout of a step on a stopped worker), and the scores; then each sample's
episode from the trajectory store. Under a running atroposCollect, its last heartbeat: how long it has run, and, from
workers that send them, the Python worker's stack and the environment's last lines of output. Under each runHarness (a harness environment's rollout) its model calls from the
store, each replayed (answered from the record after a crash) or live, with its tokens, model time and the request's
last message, and the rollout's outcome: the agent's exit, the check, and where a retry diverged from the record; a
running one shows its last heartbeat.

Options:
  --env <name>      the run's environment (found by search attributes or in the store when not given)
  --store <dir|url> the trajectory store the run used: a directory or s3://bucket/prefix (default $CLOTHO_HOME/store)

Connects to TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE) when set, otherwise to the local dev server.`;

/** `clotho inspect`: a rollout group's steps, retries and scores, from Temporal and the trajectory store. */
export async function inspectCommand(argv: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parse(argv);
  let store: TrajectoryStore;
  try {
    store = openStore(values.store);
  } catch (error) {
    throw new ConfigError([(error as Error).message]);
  }
  const temporal = await openTemporal();
  try {
    const workflowId = await resolveWorkflowId(temporal.client, store, positionals, values.env, temporal.searchAttributes);
    const handle = temporal.client.workflow.getHandle(workflowId);
    const [history, description] = await Promise.all([handle.fetchHistory(), handle.describe()]).catch((error: unknown) => {
      if (error instanceof WorkflowNotFoundError)
        throw new Error(`no workflow ${workflowId} in namespace ${temporal.endpoint.namespace} at ${temporal.endpoint.address}`);
      throw error;
    });
    const converter = temporal.client.options.loadedDataConverter.payloadConverter;
    const timeline = buildTimeline(history, (payload) => converter.fromPayload(payload), description.raw.pendingActivities ?? []);
    for (const line of header(workflowId, description.runId, timeline)) io.out(line);
    io.out('');
    const beneath = await harnessDetails(store, timeline);
    // A running Atropos collect: how long it has run, where its Python worker is, what the environment printed last.
    for (const step of timeline.steps)
      if (step.activity === 'atroposCollect' && step.status === 'running') beneath.set(step, collectHeartbeatLines(step.heartbeat));
    for (const line of formatSteps(timeline, beneath)) io.out(line);
    if (timeline.end.status === 'running') {
      // The history says more of a stalled workflow task (its worker) than the description does.
      const stalled = stalledWorkflowTask(workflowId, history);
      const waiting = waitingIn(workflowId, description.raw).filter((w) => !(stalled && w.what === 'workflow task'));
      for (const work of [...waiting, ...(stalled ? [stalled] : [])]) io.out(`waiting: ${waitingText(work)}`);
    }
    io.out('');
    io.out(formatEnd(timeline));
    const group = (timeline.input ?? {}) as Partial<GroupAddress>;
    const tokenizerOf = group.runId && group.environment ? runTokenizer(store, group.runId, group.environment) : undefined;
    for (const key of groupKeys(timeline.end.result)) for (const line of await sampleLines(store, key, tokenizerOf)) io.out(line);
    return timeline.end.status === 'completed' || timeline.end.status === 'running' ? 0 : 1;
  } finally {
    await temporal.close();
  }
}

/** The lines beneath each runHarness step: its rollout's calls and outcome from the store, its last heartbeat. */
export async function harnessDetails(store: TrajectoryStore, timeline: Timeline): Promise<Map<TimelineStep, string[]>> {
  const details = new Map<TimelineStep, string[]>();
  for (const step of timeline.steps) {
    if (step.activity !== 'runHarness') continue;
    const input = step.input as Partial<GroupAddress & { sample: number }> | undefined;
    if (input?.runId === undefined || input.environment === undefined || input.itemIndex === undefined || input.sample === undefined)
      continue;
    const address = { runId: input.runId, environment: input.environment, itemIndex: input.itemIndex };
    const heartbeat = HarnessProgressSchema.safeParse(step.heartbeat);
    const progress = step.status === 'running' && heartbeat.success ? heartbeat.data : undefined;
    try {
      const sample = await readHarnessSample(store, address, input.sample, { attempt: step.attempt, ...(progress ? { progress } : {}) });
      const missing = !sample && step.status === 'completed';
      details.set(
        step,
        missing ? [`no records in the trajectory store ${storeLabel(store)} (set --store)`] : harnessLines(sample, progress),
      );
    } catch (error) {
      details.set(step, [`store: ${(error as Error).message}`]);
    }
  }
  return details;
}

/** The store keys of a finished group's assembled groups: a rolloutGroup's one, or each an atroposRolloutGroup kept. */
function groupKeys(result: unknown): string[] {
  const r = result as Partial<RolloutGroupResult & Pick<AtroposGroupResult, 'groups'>> | undefined;
  return r?.group ? [r.group.key] : (r?.groups ?? []).map((ref) => ref.key);
}

function parse(argv: string[]) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { env: { type: 'string' }, store: { type: 'string' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new ConfigError([(error as Error).message]);
  }
  const { positionals } = parsed;
  const byWorkflowId = positionals.length === 1 && positionals[0]!.includes('/');
  const byItem = positionals.length === 2 && /^\d+$/.test(positionals[1]!);
  if (!byWorkflowId && !byItem) throw new ConfigError([`expected <run id> <item> or <workflow id>; ${INSPECT_USAGE.split('\n')[0]}`]);
  return { values: parsed.values, positionals };
}

/** The group's workflow id: given, or built from run, item and the environment (named, searched, or in the store). */
async function resolveWorkflowId(
  client: Client,
  store: TrajectoryStore,
  positionals: string[],
  env: string | undefined,
  search: boolean,
): Promise<string> {
  if (positionals.length === 1) return positionals[0]!;
  const [runId, item] = [positionals[0]!, Number(positionals[1])];
  if (env !== undefined) return rolloutGroupId(runId, env, item);
  const found = new Set<string>();
  if (search) {
    const query = `${ROLLOUT_GROUP_TYPES} AND ClothoRunId = ${JSON.stringify(runId)} AND ClothoItemIndex = ${item}`;
    for await (const execution of client.workflow.list({ query })) found.add(execution.workflowId);
  }
  // A cluster without Clotho's search attributes, or a visibility store that lags: the store has the run's environments.
  if (found.size === 0) {
    for await (const { key } of store.list(storeKey(runId))) {
      const environment = key.split('/')[1];
      if (environment !== undefined && key.startsWith(`${runId}/${environment}/item-${item}/`))
        found.add(rolloutGroupId(runId, environment, item));
    }
  }
  if (found.size === 1) return [...found][0]!;
  if (found.size > 1)
    throw new Error(`run ${runId} has item ${item} in several environments: ${[...found].join(', ')}; name one with --env`);
  throw new Error(
    `no rollout group of run ${runId}, item ${item} (searched Temporal and the store ${storeLabel(store)}); name the environment with --env`,
  );
}

function header(workflowId: string, runId: string, timeline: Timeline): string[] {
  const input = (timeline.input ?? {}) as Partial<RolloutGroupInput>;
  const took =
    timeline.end.atMs === null
      ? `running for ${duration(Date.now() - timeline.startedAt)}`
      : `${timeline.end.status} in ${duration(timeline.end.atMs)}`;
  const lines = [`${workflowId} (${timeline.workflowType}, run ${runId}): ${took}, started ${new Date(timeline.startedAt).toISOString()}`];
  if (input.runId !== undefined) {
    const turns = input.maxTurns !== undefined && input.maxTurns > 1 ? ` · up to ${input.maxTurns} turns` : '';
    lines.push(
      `run ${input.runId} · environment ${input.environment} · item ${input.itemIndex}${input.groupSize === undefined ? '' : ` · group of ${input.groupSize}`}${turns}`,
    );
  }
  return lines;
}
