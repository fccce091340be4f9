import { defaultPayloadConverter } from '@temporalio/common';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { callRecord, harnessOutcome, writeHarnessRollout } from '../../test/support/harness-records.js';
import { FileSystemStore } from '../store/trajectory-store.js';
import { harnessDetails } from './commands/inspect.js';
import { buildTimeline, type History, type PendingActivity } from './history-timeline.js';
import { formatEnd, formatSteps } from './timeline-format.js';

const T0 = 1_800_000_000;
const payloads = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });
const decode = (payload: Parameters<typeof defaultPayloadConverter.fromPayload>[0]) => defaultPayloadConverter.fromPayload(payload);
const time = (ms: number) => ({ seconds: T0 + Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
const marker = (seq: number, type: string, attempt: number, completeMs: number, extra: Record<string, unknown> = {}) =>
  payloads({
    seq,
    attempt,
    activity_id: String(seq),
    activity_type: type,
    complete_time: time(completeMs),
    backoff: null,
    original_schedule_time: null,
    ...extra,
  });

/** A history as a list of [ms since start, attributes] pairs; event ids are positions from 1. */
function history(events: [number, Record<string, unknown>][]): History {
  return { events: events.map(([ms, attributes], i) => ({ eventId: i + 1, eventTime: time(ms), ...attributes })) } as unknown as History;
}

const started = {
  workflowExecutionStartedEventAttributes: {
    workflowType: { name: 'rolloutGroup' },
    input: payloads({ runId: 'r', environment: 'e', itemIndex: 3, groupSize: 2 }),
  },
};

describe('buildTimeline', () => {
  it('decodes local-activity markers: their results, failed attempts waiting on a backoff, and a final failure', () => {
    const timeline = buildTimeline(
      history([
        [0, started],
        [10, { workflowTaskStartedEventAttributes: {} }], // 2
        [30, { workflowTaskCompletedEventAttributes: { startedEventId: 2 } }], // 3
        [
          30,
          {
            markerRecordedEventAttributes: {
              markerName: 'core_local_activity',
              workflowTaskCompletedEventId: 3,
              details: { data: marker(1, 'parseGroup', 1, 14), result: payloads({ key: 'p' }) },
            },
          },
        ],
        [
          30,
          {
            markerRecordedEventAttributes: {
              markerName: 'core_local_activity',
              workflowTaskCompletedEventId: 3,
              details: { data: marker(2, 'scoreGroup', 1, 25, { backoff: { seconds: 2 } }) },
              failure: { message: 'judge busy' },
            },
          },
        ],
        [2000, { workflowTaskStartedEventAttributes: {} }], // 6
        [2050, { workflowTaskCompletedEventAttributes: { startedEventId: 6 } }], // 7
        [
          2050,
          {
            markerRecordedEventAttributes: {
              markerName: 'core_local_activity',
              workflowTaskCompletedEventId: 7,
              details: { data: marker(2, 'scoreGroup', 2, 2040), result: payloads({ scores: [1, -1], metrics: {} }) },
            },
          },
        ],
        [
          2060,
          {
            markerRecordedEventAttributes: {
              markerName: 'core_local_activity',
              workflowTaskCompletedEventId: 7,
              details: { data: marker(3, 'assembleGroup', 3, 2045) },
              failure: { message: 'Activity failed', cause: { message: 'disk full' } },
            },
          },
        ],
        [
          2070,
          { workflowExecutionFailedEventAttributes: { failure: { message: 'Activity task failed', cause: { message: 'disk full' } } } },
        ],
      ]),
      decode,
    );
    expect(timeline.input).toMatchObject({ itemIndex: 3 });
    expect(timeline.steps.map((s) => [s.activity, s.local, s.startMs, s.durationMs, s.status, s.attempt])).toEqual([
      ['parseGroup', true, 10, 4, 'completed', 1],
      // Starts when parseGroup ended (same workflow task); its retry ran in the next task.
      ['scoreGroup', true, 14, 2026, 'completed', 2],
      ['assembleGroup', true, 2040, 5, 'failed', 3],
    ]);
    expect(timeline.steps[1]!.retries).toEqual([{ attempt: 1, message: 'judge busy' }]);
    expect(timeline.end).toEqual({ status: 'failed', atMs: 2070, error: 'Activity task failed: disk full' });
    expect(formatSteps(timeline)).toEqual([
      '   +0.010s       4 ms  parseGroup [local]',
      '   +0.014s     2.03 s  scoreGroup: scores 1, -1 [local, attempt 2]',
      '                       retry: attempt 1 failed: judge busy',
      '   +2.040s       5 ms  assembleGroup [local, attempt 3, FAILED]',
      "                       retry: 2 earlier attempts failed (a local activity's failures are not kept in the history)",
      '                       error: Activity failed: disk full',
    ]);
    expect(formatEnd(timeline)).toBe('result: failed: Activity task failed: disk full');
  });

  it('shows a timed-out activity, and a running one with the attempt and failure describe reports', () => {
    const pending = [{ activityId: '2', attempt: 4, lastFailure: { message: 'HTTP 503 from the model server' } }] as PendingActivity[];
    const timeline = buildTimeline(
      history([
        [0, started],
        [
          5,
          { activityTaskScheduledEventAttributes: { activityId: '1', activityType: { name: 'stepTurn' }, input: payloads({ turn: 0 }) } },
        ],
        [9, { activityTaskStartedEventAttributes: { scheduledEventId: 2, attempt: 1 } }],
        [60_005, { activityTaskTimedOutEventAttributes: { scheduledEventId: 2, failure: { message: 'activity StartToClose timeout' } } }],
        [
          60_010,
          {
            activityTaskScheduledEventAttributes: { activityId: '2', activityType: { name: 'generateTurn' }, input: payloads({ turn: 1 }) },
          },
        ],
      ]),
      decode,
      pending,
    );
    expect(formatSteps(timeline)).toEqual([
      '   +0.005s    60.00 s  stepTurn turn 0 [TIMED OUT]',
      '                       error: activity StartToClose timeout',
      '  +60.010s    running  generateTurn turn 1 [attempt 4]',
      '                       retry: attempt 3 failed: HTTP 503 from the model server',
    ]);
    expect(formatEnd(timeline)).toBe('result: still running');
  });

  it('names each call of a turn’s local callTurnTools marker with its outcome', () => {
    const calls = [
      { sample: 0, call: 0, name: 'add', outcome: 'ok', content: 'total 2' },
      { sample: 1, call: 0, name: 'divide', outcome: 'tool_error', content: 'Error: division by zero' },
    ];
    const timeline = buildTimeline(
      history([
        [0, started],
        [10, { workflowTaskStartedEventAttributes: {} }], // 2
        [90, { workflowTaskCompletedEventAttributes: { startedEventId: 2 } }], // 3
        [
          90,
          {
            markerRecordedEventAttributes: {
              markerName: 'core_local_activity',
              workflowTaskCompletedEventId: 3,
              details: {
                data: marker(1, 'generateTurn', 1, 40),
                result: payloads({ active: [0, 1], completionTokens: [3, 4], toolCalls: [] }),
              },
            },
          },
        ],
        [
          90,
          {
            markerRecordedEventAttributes: {
              markerName: 'core_local_activity',
              workflowTaskCompletedEventId: 3,
              details: { data: marker(2, 'callTurnTools', 1, 60), result: payloads(calls) },
            },
          },
        ],
      ]),
      decode,
    );
    expect(formatSteps(timeline)[1]).toBe(
      '   +0.040s      20 ms  callTurnTools turn 0: add sample 0 → ok: total 2; divide sample 1 → tool_error: Error: division by zero [local]',
    );
  });

  it('reports a dropped group with its reason', () => {
    const result = { status: 'dropped', dropReason: 'scores_all_equal', scores: [0, 0], meanScore: 0, turns: 1 };
    const timeline = buildTimeline(
      history([
        [0, started],
        [40, { workflowExecutionCompletedEventAttributes: { result: payloads(result) } }],
      ]),
      decode,
    );
    expect(formatEnd(timeline)).toBe('result: dropped (scores_all_equal) · scores 0, 0 · mean 0 · 1 turn');
  });

  it("reports an Atropos group that delivers nothing with Atropos's reason", () => {
    const declined = (reason: string) => {
      const result = { itemIndex: 2, status: 'declined', reason, groups: [], scores: [], dropped: {}, backlog: [], policyVersion: null };
      return formatEnd(
        buildTimeline(
          history([
            [0, started],
            [40, { workflowExecutionCompletedEventAttributes: { result: payloads(result) } }],
          ]),
          decode,
        ),
      );
    };
    expect(declined('identical scores')).toBe('result: declined (identical scores)');
    expect(declined('declined')).toBe('result: declined (collect_trajectories returned no group)');
  });

  it('shows a failed workflow task (a nondeterminism error stalls the group)', () => {
    const failure = { message: '[TMPRL1100] Nondeterminism error: Activity type of scheduled event does not match' };
    const timeline = buildTimeline(
      history([
        [0, started],
        [1500, { workflowTaskFailedEventAttributes: { cause: 24, failure } }],
      ]),
      decode,
    );
    expect(formatSteps(timeline)).toEqual([
      '   +1.500s       0 ms  workflow task [FAILED]',
      `                       error: ${failure.message}`,
    ]);
  });
});

describe("a harness group's timeline (clotho inspect)", () => {
  it("lists each rollout's model calls beneath its runHarness, replayed or live, its outcome, and a running one's heartbeat", async () => {
    const root = await mkdtemp(join(tmpdir(), 'clotho-inspect-harness-'));
    try {
      const store = new FileSystemStore(root);
      const address = { runId: 'r', environment: 'e', itemIndex: 3 };
      const summary = (k: number) =>
        k === 0 ? 'user: `mean([])` raises ZeroDivisionError; fix it' : `user: <returncode>0</returncode> <output> step ${k} </output>`;
      const calls = (n: number) => Array.from({ length: n }, (_, k) => callRecord(k, summary(k), 'THOUGHT: look ```ls```'));
      const diverged = [{ call: 2, reason: 'message 3 differs (5 messages, 5 recorded)' }];
      const check = { exitCode: 1, passed: false, output: 'Ran 2 tests\n\nFAILED (failures=2)\n', timedOut: false };
      await writeHarnessRollout(store, address, 0, calls(3), {
        outcome: harnessOutcome({ agent: 'mini-swe-agent', ended: 'calls', exitCode: null, calls: 3, replayed: 2, diverged, check }),
      });
      // Sample 1 runs: its attempt answered two calls (per its heartbeat); call 2 is the record of the attempt before.
      await writeHarnessRollout(store, address, 1, calls(3));
      const input = (sample: number) =>
        payloads({ ...address, sample, sampling: { temperature: 1, topP: 1 }, maxTurns: 3, maxTokenLength: 1000 });
      const scheduled = (id: string, sample: number) => ({
        activityTaskScheduledEventAttributes: { activityId: id, activityType: { name: 'runHarness' }, input: input(sample) },
        userMetadata: { summary: defaultPayloadConverter.toPayload(`sample ${sample}`) },
      });
      const heartbeat = { calls: 2, replayed: 0, last: summary(1) };
      const pending = [
        { activityId: '2', attempt: 2, lastStartedTime: time(900), lastHeartbeatTime: time(1100), heartbeatDetails: payloads(heartbeat) },
      ] as unknown as PendingActivity[];
      const result = { calls: 3, replayed: 2, diverged: 1, passed: false, ended: 'calls' };
      const timeline = buildTimeline(
        history([
          [0, started],
          [5, scheduled('1', 0)], // 2
          [5, scheduled('2', 1)], // 3
          [8, { activityTaskStartedEventAttributes: { scheduledEventId: 2, attempt: 1 } }],
          [1205, { activityTaskCompletedEventAttributes: { scheduledEventId: 2, result: payloads(result) } }],
        ]),
        decode,
        pending,
      );
      expect(timeline.steps[1]!.heartbeat).toEqual(heartbeat);
      // A retry that has not heartbeaten yet: the details are the failed attempt's, not shown as its progress.
      const stale = [{ ...pending[0], lastHeartbeatTime: time(800) }] as unknown as PendingActivity[];
      expect(
        buildTimeline(
          history([
            [0, started],
            [5, scheduled('2', 1)],
          ]),
          decode,
          stale,
        ).steps[0]!.heartbeat,
      ).toBeUndefined();
      const pad = ' '.repeat(23);
      expect(formatSteps(timeline, await harnessDetails(store, timeline))).toEqual([
        '   +0.005s     1.20 s  runHarness sample 0: 3 model calls (2 replayed), ended: its model calls were spent, 1 divergence, check failed',
        `${pad}call 0 · replayed · 100 prompt + 3 completion tokens · 10 ms · ${summary(0)}`,
        `${pad}call 1 · replayed · 150 prompt + 3 completion tokens · 20 ms · ${summary(1)}`,
        `${pad}call 2 · live · 200 prompt + 3 completion tokens · 30 ms · ${summary(2)}`,
        `${pad}outcome: agent mini-swe-agent stopped · ended: its model calls were spent · check failed (exit 1): FAILED (failures=2) · 3 model calls, 2 replayed`,
        `${pad}diverged at call 2: message 3 differs (5 messages, 5 recorded)`,
        '   +0.005s    running  runHarness sample 1 [attempt 2]',
        `${pad}heartbeat: 2 model calls so far (0 replayed) · last request ${summary(1)}`,
        `${pad}call 0 · live · 100 prompt + 3 completion tokens · 10 ms · ${summary(0)}`,
        `${pad}call 1 · live · 150 prompt + 3 completion tokens · 20 ms · ${summary(1)}`,
        `${pad}call 2 · recorded · 200 prompt + 3 completion tokens · 30 ms · ${summary(2)}`,
      ]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
