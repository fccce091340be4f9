import type { WorkflowClient, WorkflowExecutionDescription } from '@temporalio/client';
import proto from '@temporalio/proto';
import { z } from 'zod';
import { ROLLOUT_GROUP_TYPES } from './view/temporal.js';

// A CommonJS package: its namespaces come through the default export.
const { PendingActivityState } = proto.temporal.api.enums.v1;

/**
 * What a running `atroposCollect` heartbeats: how long it has run and, from workers that send them, where the Python
 * worker is (its stack, innermost frame last) and the environment's last lines of output. Read loosely: a worker
 * that sends only `seconds` is shown with what it sends.
 */
export const CollectHeartbeatSchema = z.looseObject({
  seconds: z.number(),
  stack: z.array(z.string()).optional(),
  lastOutput: z.array(z.string()).optional(),
});
export type CollectHeartbeat = z.infer<typeof CollectHeartbeatSchema>;

/** A group whose collect has run far longer than the run's groups usually take. */
export interface SlowCollect {
  workflowId: string;
  itemIndex: number | null;
  /** Since the group started (every attempt of its collect). */
  runningMs: number;
  /** The median time of the run's finished groups, when enough have finished to say. */
  usualMs: number | null;
  attempt: number;
  heartbeat: CollectHeartbeat | null;
}

/** When a group counts as far past the usual: how many times the median, at least how long, and without a median. */
export interface SlowPolicy {
  /** @default 5 */
  timesUsual: number;
  /** @default 30 s */
  floorMs: number;
  /** Before {@link SlowPolicy.minFinished} groups have finished: Atropos's default worker_timeout. @default 600 s */
  withoutUsualMs: number;
  /** @default 3 */
  minFinished: number;
}

export const SLOW_POLICY: SlowPolicy = { timesUsual: 5, floorMs: 30_000, withoutUsualMs: 600_000, minFinished: 3 };

/** Whether a group running `runningMs` is far past the run's `usualMs` (null: not known yet). */
export function isSlow(runningMs: number, usualMs: number | null, policy: SlowPolicy = SLOW_POLICY): boolean {
  if (usualMs === null) return runningMs > policy.withoutUsualMs;
  return runningMs > Math.max(policy.timesUsual * usualMs, policy.floorMs);
}

const seconds = (ms: number) => (ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`);

/** Where a collect is: its innermost frame, else the environment's last line of output; empty when it says neither. */
export function whereItIs(heartbeat: CollectHeartbeat | null): string {
  const frame = heartbeat?.stack?.at(-1)?.trim();
  if (frame) return `at ${frame}`;
  const output = heartbeat?.lastOutput?.findLast((line) => line.trim() !== '');
  return output ? `last output ${JSON.stringify(output.trim().slice(0, 80))}` : '';
}

/** The progress line's words: `item 3: collect running 412 s (usual 3.1 s) · at env.py:88 in score (+1 more)`. */
export function slowSummary(slow: readonly SlowCollect[]): string {
  const [longest, ...others] = [...slow].sort((a, b) => b.runningMs - a.runningMs);
  if (!longest) return '';
  const item = longest.itemIndex === null ? longest.workflowId : `item ${longest.itemIndex}`;
  const usual = longest.usualMs === null ? '' : ` (usual ${seconds(longest.usualMs)})`;
  const attempt = longest.attempt > 1 ? `, attempt ${longest.attempt}` : '';
  const where = whereItIs(longest.heartbeat);
  const more = others.length > 0 ? ` (+${others.length} more)` : '';
  return `${item}: collect running ${seconds(longest.runningMs)}${usual}${attempt}${where ? ` · ${where}` : ''}${more}`;
}

/** The running collect of a group's description, if it has one: its attempt and last heartbeat. */
function runningCollect(raw: WorkflowExecutionDescription['raw'], decode: (payload: unknown) => unknown) {
  const collect = (raw.pendingActivities ?? []).find(
    (a) => a.activityType?.name === 'atroposCollect' && a.state !== PendingActivityState.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED,
  );
  if (!collect) return undefined;
  const payload = collect.heartbeatDetails?.payloads?.[0];
  const parsed = payload ? CollectHeartbeatSchema.safeParse(decode(payload)) : undefined;
  return { attempt: collect.attempt ?? 1, heartbeat: parsed?.success ? parsed.data : null };
}

/** Groups of the run's finished ones whose times make the median. */
const FINISHED_LOOKED_AT = 100;
/** How often the finished groups are listed again. */
const USUAL_EVERY_MS = 30_000;

/**
 * Finds an Atropos run's collects that have run far past its usual group time: {@link SlowWatcher.observe} is given
 * each group in flight as it is described (the waiting watcher's looks), and {@link SlowWatcher.look} answers those
 * past the policy, against the median time of up to 100 of the run's finished groups (Temporal's visibility, listed
 * again every 30 s).
 */
export function slowWatcher(client: WorkflowClient, policy: SlowPolicy = SLOW_POLICY) {
  const decode = (payload: unknown) => client.options.loadedDataConverter.payloadConverter.fromPayload(payload as never);
  const groups = new Map<string, { startedAt: number; collect: ReturnType<typeof runningCollect> }>();
  let usual: { ms: number | null; at: number } | undefined;
  const usualMs = async (taskQueue: string): Promise<number | null> => {
    if (usual && Date.now() - usual.at < USUAL_EVERY_MS) return usual.ms;
    const query = `${ROLLOUT_GROUP_TYPES} AND TaskQueue = ${JSON.stringify(taskQueue)} AND ExecutionStatus = "Completed"`;
    const times: number[] = [];
    for await (const info of client.list({ query, pageSize: FINISHED_LOOKED_AT })) {
      if (info.closeTime) times.push(info.closeTime.getTime() - info.startTime.getTime());
      if (times.length >= FINISHED_LOOKED_AT) break;
    }
    times.sort((a, b) => a - b);
    const median = times.length >= policy.minFinished ? times[Math.floor(times.length / 2)]! : null;
    usual = { ms: median, at: Date.now() };
    return median;
  };
  return {
    /** A group in flight, as just described. */
    observe(workflowId: string, description: WorkflowExecutionDescription): void {
      groups.set(workflowId, { startedAt: description.startTime.getTime(), collect: runningCollect(description.raw, decode) });
    },
    /** The collects past the policy among `inFlight` (the env-run's groups now), on the run's workflow `taskQueue`. */
    async look(inFlight: readonly string[], taskQueue: string, now = Date.now()): Promise<SlowCollect[]> {
      for (const id of groups.keys()) if (!inFlight.includes(id)) groups.delete(id);
      const candidates = [...groups].filter(([, g]) => g.collect);
      if (candidates.length === 0) return [];
      const median = await usualMs(taskQueue);
      return candidates.flatMap(([workflowId, { startedAt, collect }]) => {
        const runningMs = now - startedAt;
        if (!isSlow(runningMs, median, policy)) return [];
        const item = /\/item-(\d+)$/.exec(workflowId)?.[1];
        const { attempt, heartbeat } = collect!;
        return [{ workflowId, itemIndex: item === undefined ? null : Number(item), runningMs, usualMs: median, attempt, heartbeat }];
      });
    },
  };
}

export type SlowWatcher = ReturnType<typeof slowWatcher>;

/** Lines beneath a running collect in `clotho inspect`: how long it has run, where the worker is, what it printed last. */
export function collectHeartbeatLines(heartbeat: unknown): string[] {
  const parsed = CollectHeartbeatSchema.safeParse(heartbeat);
  if (!parsed.success) return [];
  const { seconds: running, stack = [], lastOutput = [] } = parsed.data;
  return [
    `heartbeat: collect running ${seconds(running * 1000)}`,
    ...(stack.length > 0 ? ['stack (innermost last):', ...stack.map((frame) => `  ${frame}`)] : []),
    ...(lastOutput.length > 0 ? ["the environment's last output:", ...lastOutput.map((line) => `  ${line}`)] : []),
  ];
}
