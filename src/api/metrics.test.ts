import { describe, expect, it } from 'vitest';
import { MetricsSnapshotSchema } from '../schema/api.js';
import { renderPrometheus } from './metrics.js';

const snapshot = MetricsSnapshotSchema.parse({
  currentStep: 7,
  groupsReceived: 40,
  groupsBuffered: 3,
  groupsDropped: { scores_all_equal: 5, stale: 2 },
  batchesFormed: 7,
  batchesServed: 6,
  queueDepth: 4,
  postsRefused: 3,
  groupsRefused: 5,
  leasesExpired: 2,
  leasesRenewed: 9,
  supersessionErrors: 1,
  envs: [
    { env: 'gsm8k_0', envId: 0, groupsReceived: 30, groupsBuffered: 3, groupsDropped: { stale: 2 }, queueDepth: 3 },
    { env: 'odd "name"\\', envId: 1, groupsReceived: 10, groupsBuffered: 0, groupsDropped: {}, queueDepth: 1 },
  ],
});

describe('renderPrometheus', () => {
  const text = renderPrometheus(snapshot);
  const samples = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));

  it('renders every counter and gauge, totals and per env', () => {
    expect(samples).toEqual([
      'clotho_current_step 7',
      'clotho_groups_received_total 40',
      'clotho_groups_buffered_total 3',
      'clotho_groups_dropped_total{reason="scores_all_equal"} 5',
      'clotho_groups_dropped_total{reason="stale"} 2',
      'clotho_batches_formed_total 7',
      'clotho_batches_served_total 6',
      'clotho_queue_depth 4',
      'clotho_posts_refused_total 3',
      'clotho_groups_refused_total 5',
      'clotho_leases_expired_total 2',
      'clotho_leases_renewed_total 9',
      'clotho_supersession_errors_total 1',
      'clotho_env_groups_received_total{env="gsm8k_0"} 30',
      'clotho_env_groups_received_total{env="odd \\"name\\"\\\\"} 10',
      'clotho_env_groups_buffered_total{env="gsm8k_0"} 3',
      'clotho_env_groups_buffered_total{env="odd \\"name\\"\\\\"} 0',
      'clotho_env_groups_dropped_total{env="gsm8k_0",reason="stale"} 2',
      'clotho_env_queue_depth{env="gsm8k_0"} 3',
      'clotho_env_queue_depth{env="odd \\"name\\"\\\\"} 1',
    ]);
  });

  it('declares each family once with its type, and ends with a newline', () => {
    expect(text).toContain('# TYPE clotho_groups_dropped_total counter\n');
    expect(text).toContain('# TYPE clotho_queue_depth gauge\n');
    expect(text.match(/^# TYPE /gm)).toHaveLength(17);
    expect(text.endsWith('\n')).toBe(true);
  });
});
