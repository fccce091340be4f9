import type { MetricsSnapshot } from '../schema/api.js';

/** `Content-Type` of the Prometheus text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Record<string, string>;
type Sample = [labels: Labels, value: number];

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

function family(name: string, type: 'counter' | 'gauge', help: string, samples: Sample[]): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
  for (const [labels, value] of samples) {
    const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
    lines.push(`${name}${pairs.length > 0 ? `{${pairs.join(',')}}` : ''} ${value}`);
  }
  return lines.join('\n');
}

const byReason = (dropped: Record<string, number>, labels: Labels = {}): Sample[] =>
  Object.entries(dropped).map(([reason, n]) => [{ ...labels, reason }, n]);

/**
 * Renders a metrics snapshot in the Prometheus text format. Totals and per-environment series are
 * separate families (`clotho_*` and `clotho_env_*`), so summing a family never counts a group twice.
 * `irregular` counts the groups this API process accepted although part of them looks wrong, by kind.
 */
export function renderPrometheus(m: MetricsSnapshot, irregular: Record<string, number | undefined> = {}): string {
  const perEnv = (pick: (e: MetricsSnapshot['envs'][number]) => number): Sample[] => m.envs.map((e) => [{ env: e.env }, pick(e)]);
  return (
    [
      family('clotho_current_step', 'gauge', 'Batches formed so far (the trainer step).', [[{}, m.currentStep]]),
      family('clotho_groups_received_total', 'counter', 'Scored groups posted.', [[{}, m.groupsReceived]]),
      family('clotho_groups_buffered_total', 'counter', 'Groups held back to merge to the group size.', [[{}, m.groupsBuffered]]),
      family('clotho_groups_dropped_total', 'counter', 'Groups not delivered, by reason.', byReason(m.groupsDropped)),
      family('clotho_batches_formed_total', 'counter', 'Batches formed.', [[{}, m.batchesFormed]]),
      family('clotho_batches_served_total', 'counter', 'Batches handed to trainers.', [[{}, m.batchesServed]]),
      family('clotho_queue_depth', 'gauge', 'Groups waiting in the queue.', [[{}, m.queueDepth]]),
      family('clotho_posts_refused_total', 'counter', 'Posts of scored groups this API process answered 503: the queue was full.', [
        [{}, m.postsRefused],
      ]),
      family('clotho_groups_refused_total', 'counter', 'Groups in the posts this API process answered 503.', [[{}, m.groupsRefused]]),
      family('clotho_leases_expired_total', 'counter', 'Leases that ran out before their ack: their batches are served again.', [
        [{}, m.leasesExpired],
      ]),
      family('clotho_leases_renewed_total', 'counter', 'Leases renewed by their trainers.', [[{}, m.leasesRenewed]]),
      family('clotho_supersession_errors_total', 'counter', 'Training runs this one superseded that could not be told to end.', [
        [{}, m.supersessionErrors],
      ]),
      family(
        'clotho_groups_irregular_total',
        'counter',
        'Groups this API process accepted, as Atropos does, though part of them looks wrong, by kind.',
        Object.entries(irregular).map(([kind, n]): Sample => [{ kind }, n ?? 0]),
      ),
      family(
        'clotho_env_groups_received_total',
        'counter',
        'Scored groups posted, per environment.',
        perEnv((e) => e.groupsReceived),
      ),
      family(
        'clotho_env_groups_buffered_total',
        'counter',
        'Groups held back, per environment.',
        perEnv((e) => e.groupsBuffered),
      ),
      family(
        'clotho_env_groups_dropped_total',
        'counter',
        'Groups not delivered, per environment and reason.',
        m.envs.flatMap((e) => byReason(e.groupsDropped, { env: e.env })),
      ),
      family(
        'clotho_env_queue_depth',
        'gauge',
        'Groups waiting in the queue, per environment.',
        perEnv((e) => e.queueDepth),
      ),
    ].join('\n') + '\n'
  );
}
