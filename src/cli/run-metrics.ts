import { z } from 'zod';
import { createWorkerMetrics, type WorkerMetrics } from '../workers/metrics.js';
import { envRunStatusQuery } from '../workflows/messages.js';
import { startMetricsServer } from './metrics-server.js';
import type { RunPlan } from './run.js';
import type { TemporalRuntime } from './runtime.js';

/** The flag of every command that runs workers (`clotho process | serve | worker`). */
export const METRICS_FLAGS = {
  'metrics-port': z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .optional()
    .describe('serve Prometheus metrics of this process at http://<host>:<port>/metrics (0: any free port)'),
};

/** A run's process metrics: collected when --metrics-port or --env.use_wandb asks for them, served with the first. */
export interface RunMetrics {
  metrics?: WorkerMetrics;
  /** The port /metrics is served on, when it is. */
  port?: number;
  close(): Promise<void>;
}

/**
 * Collects the metrics of this process's workers when anyone reads them (Prometheus at --metrics-port, W&B's
 * server metrics with --env.use_wandb), with the run's groups by status read from its env-run at each scrape.
 */
export async function startRunMetrics(plan: RunPlan, temporal: TemporalRuntime, envRunId: string): Promise<RunMetrics> {
  const port = (plan.config.rest.flags as { 'metrics-port'?: number })['metrics-port'];
  if (port === undefined && !plan.config.env.use_wandb) return { close: async () => undefined };
  const metrics = createWorkerMetrics({ rollingBufferLength: plan.config.servers[0]?.rolling_buffer_length });
  if (port === undefined) return { metrics, close: async () => undefined };
  return serveRunMetrics(metrics, port, plan.definition.name, temporal, envRunId);
}

/** Serves `metrics` at --metrics-port with the run's groups, evaluations and logged metrics read from its env-run. */
export async function serveRunMetrics(
  metrics: WorkerMetrics,
  port: number,
  environment: string,
  temporal: TemporalRuntime,
  envRunId: string,
): Promise<RunMetrics> {
  metrics.watchRun(environment, () => temporal.client.workflow.getHandle(envRunId).query(envRunStatusQuery));
  const server = await startMetricsServer(metrics.registry, port);
  return { metrics, port: server.port, close: () => server.close() };
}
