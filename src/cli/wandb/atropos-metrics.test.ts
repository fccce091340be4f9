import { describe, expect, it } from 'vitest';
import { AtroposMetrics, type FinishedGroup } from './atropos-metrics.js';

const M = -100;
const chat = (q: string, a: string) => [
  { role: 'user', content: q },
  { role: 'assistant', content: a },
];
const scored = (
  itemIndex: number,
  scores: number[],
  masks: number[][],
  seconds: number,
  metrics?: Record<string, number>,
): FinishedGroup => ({
  itemIndex,
  status: 'scored',
  scores,
  seconds,
  ...(metrics ? { metrics } : {}),
  group: { scores, masks, messages: scores.map((_, i) => chat(`q${itemIndex}.${i}`, `a${itemIndex}.${i}`)) },
});

const groups: FinishedGroup[] = [
  scored(
    0,
    [1, -1],
    [
      [M, M, 5, 6, 7],
      [M, 8, 9],
    ],
    2,
    { format: 1 },
  ),
  { itemIndex: 1, status: 'dropped', scores: [1, 1], seconds: 4, metrics: { format: 0 } },
  scored(
    2,
    [-1, 1],
    [
      [M, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      [M, 1],
    ],
    6,
    { format: 0.5 },
  ),
  { itemIndex: 3, status: 'failed', scores: [], seconds: 8 },
  scored(4, [1, -1], [[1], [2]], 1),
];
const settings = { groupSize: 2, maxTokenLength: 10, numRolloutsToKeep: 2, numRolloutsPerGroupForLogging: 1 };
const server = { seconds: [1, 2, 3, 4], attempts: [1, 3], completionTokens: 100 };

describe('AtroposMetrics', () => {
  it("computes atroposlib's wandb_log metrics, under its names, from finished groups", () => {
    const metrics = new AtroposMetrics(settings);
    expect(metrics.flush(1000, { ...server, seconds: [], attempts: [], completionTokens: 0 })).toEqual({});
    for (const g of groups) metrics.add(g);
    const out = metrics.flush(3000, server);
    const lengths = [3, 2, 10, 1, 1, 1];
    const durations = [2, 4, 6, 8, 1];
    const std = (xs: number[]) => Math.sqrt(xs.reduce((s, x) => s + (x - xs.reduce((a, b) => a + b) / xs.length) ** 2, 0) / xs.length);
    expect(out).toEqual({
      // max(score, 0) over every scored trajectory, the dropped group's too (failed groups have none).
      'train/percent_correct': 5 / 8,
      'train/format': 0.5,
      'train/completion_lengths': 3,
      'train/completion_lengths_std': std(lengths),
      'train/completion_lengths_max': 10,
      'train/completion_lengths_min': 1,
      // Longer than 0.95 × max_token_length (10): only the 10-token completion.
      'train/completion_lengths_p95': 1 / 6,
      // The last num_rollouts_to_keep (2) delivered groups, num_rollouts_per_group_for_logging (1) trajectory each.
      'train/rollouts': {
        kind: 'table',
        columns: ['text', 'score'],
        data: [
          ['user: q2.0\n\nassistant: a2.0', -1],
          ['user: q4.0\n\nassistant: a4.0', 1],
        ],
      },
      'train_perf/task_duration_mean': 4.2,
      'train_perf/task_duration_std': std(durations),
      'train_perf/task_duration_max': 8,
      'train_perf/task_duration_min': 1,
      'train_perf/succeeded_task_duration_mean': 3,
      'train_perf/succeeded_task_duration_std': std([2, 6, 1]),
      'train_perf/succeeded_task_duration_max': 6,
      'train_perf/succeeded_task_duration_min': 1,
      'train/items_sent_to_api': 3,
      'train_perf/failed_task_duration_mean': 6,
      'train_perf/failed_task_duration_std': 2,
      'train_perf/failed_task_duration_max': 8,
      'train_perf/failed_task_duration_min': 4,
      'train/items_rejected': 2,
      'train_perf/groups_per_second': 2.5,
      'train_perf/tokens_per_second': 50,
      'server/server_0_request_time_avg': 2.5,
      'server/server_0_request_time_std': Math.sqrt(1.25),
      'server/server_0_request_time_99p': expect.closeTo(3.97, 12),
      'server/server_0_average_num_attempts': 2,
    });
    // Atropos empties its buffers at each log; the server's timings are a rolling window and stay.
    expect(metrics.flush(5000, server)).toEqual({
      'train_perf/groups_per_second': 0,
      'train_perf/tokens_per_second': 0,
      'server/server_0_request_time_avg': 2.5,
      'server/server_0_request_time_std': Math.sqrt(1.25),
      'server/server_0_request_time_99p': expect.closeTo(3.97, 12),
      'server/server_0_average_num_attempts': 2,
    });
  });

  it('reports task durations only for more than one task, as Atropos does', () => {
    const metrics = new AtroposMetrics(settings);
    metrics.add(groups[0]!);
    metrics.add(groups[1]!);
    const out = metrics.flush(0);
    expect(Object.keys(out).filter((k) => k.startsWith('train_perf/') || k.startsWith('train/items'))).toEqual([
      'train_perf/task_duration_mean',
      'train_perf/task_duration_std',
      'train_perf/task_duration_max',
      'train_perf/task_duration_min',
    ]);
  });

  it('prefixes every key but the server metrics with the registered name, and keeps every trajectory with -1', () => {
    const metrics = new AtroposMetrics({ ...settings, prefix: 'gsm8k_0', numRolloutsPerGroupForLogging: -1 });
    metrics.add(groups[0]!);
    const out = metrics.flush(0, server);
    expect(Object.keys(out).filter((k) => !k.startsWith('gsm8k_0_train'))).toEqual([
      'server/server_0_request_time_avg',
      'server/server_0_request_time_std',
      'server/server_0_request_time_99p',
      'server/server_0_average_num_attempts',
    ]);
    expect(out['gsm8k_0_train/percent_correct']).toBe(0.5);
    expect(out['gsm8k_0_train/rollouts']).toMatchObject({
      data: [
        ['user: q0.0\n\nassistant: a0.0', 1],
        ['user: q0.1\n\nassistant: a0.1', -1],
      ],
    });
  });

  it('takes the completion lengths of a messages-only group from the tokens the server counted, and none when it did not', () => {
    const metrics = new AtroposMetrics(settings);
    const messages = [chat('q', 'a'), chat('q', 'b')];
    metrics.add({
      itemIndex: 0,
      status: 'scored',
      scores: [1, -1],
      group: { messages_only: true, scores: [1, -1], messages, completion_tokens: [4, 10] },
    });
    metrics.add({
      itemIndex: 1,
      status: 'scored',
      scores: [1, -1],
      group: { messages_only: true, scores: [1, -1], messages, completion_tokens: null },
    });
    const out = metrics.flush(0);
    expect(out).toMatchObject({
      'train/completion_lengths': 7,
      'train/completion_lengths_max': 10,
      'train/completion_lengths_min': 4,
      'train/completion_lengths_p95': 0.5,
    });
    expect(out['train/rollouts']).toMatchObject({
      data: [
        ['user: q\n\nassistant: a', 1],
        ['user: q\n\nassistant: a', 1],
      ],
    });
  });
});
