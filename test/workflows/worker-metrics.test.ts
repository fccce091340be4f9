import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startMetricsServer, type MetricsServer } from '../../src/cli/metrics-server.js';
import { MASKED, type ScoredDataGroup } from '../../src/schema/scored-data.js';
import { createWorkerMetrics } from '../../src/workers/metrics.js';
import { envRunStatusQuery } from '../../src/workflows/messages.js';
import { envRun } from '../../src/workflows/env-run.js';
import { guessNumber } from '../support/environments.js';
import { startHarness, type Harness } from '../support/harness.js';
import { openAIError } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';
import { prometheusSamples } from '../support/prometheus.js';

let harness: Harness | undefined;
let server: MetricsServer | undefined;
let dir: string | undefined;
afterEach(async () => {
  await server?.close();
  await harness?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  harness = server = dir = undefined;
});

describe('worker /metrics on a real dev server', () => {
  it('counts attempts, retries, latencies, tokens and the run’s groups by status and reason', async () => {
    const metrics = createWorkerMetrics({ defaultMetrics: false });
    let calls = 0;
    // The first two generation requests are refused (503): the step is retried alone; then item 0 scores [1, -1]
    // (its secret is 40) and item 1 scores [-1, -1] (secret 41), dropped as all equal.
    harness = await startHarness({
      environment: guessNumber,
      envConfig: { group_size: 2 },
      activityInterceptors: metrics.interceptors,
      responder: (body) => {
        calls++;
        if (calls <= 2) return { status: 503, body: openAIError('overloaded', 503) };
        return { choices: Array.from({ length: body.n ?? 1 }, (_, i) => ({ text: i === 0 ? '40' : '7' })) };
      },
    });
    dir = await mkdtemp(join(tmpdir(), 'clotho-metrics-'));
    const path = join(dir, 'groups.jsonl');
    const { runId, itemIndex: _, environment: __, ...group } = harness.groupInput(0, { ensureScoresAreNotSame: true });
    const handle = await harness.temporal.client.workflow.start(envRun, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('env-run'),
      args: [{ runId, environment: guessNumber.name, totalGroups: 2, maxInFlight: 1, sink: { kind: 'jsonl', path }, group }],
    });
    metrics.watchRun(guessNumber.name, () => handle.query(envRunStatusQuery));
    server = await startMetricsServer(metrics.registry, 0, '127.0.0.1');
    const result = await handle.result();
    expect(result).toMatchObject({ completed: 2, delivered: 1, failed: 0, dropped: { scores_all_equal: 1 } });

    const response = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    const m = prometheusSamples(text);
    expect(
      m.get(
        'clotho_activity_attempts_total{activity="generateTurn",outcome="failed",error_type="ServerError",failure_class="infrastructure"}',
      ),
    ).toBe(2);
    expect(m.get('clotho_activity_attempts_total{activity="generateTurn",outcome="completed"}')).toBe(2);
    expect(m.get('clotho_activity_retries_total{activity="generateTurn"}')).toBe(2);
    expect(m.get('clotho_activity_duration_seconds_count{activity="generateTurn",outcome="failed"}')).toBe(2);
    expect(m.get('clotho_activity_duration_seconds_count{activity="generateTurn",outcome="completed"}')).toBe(2);
    // Every other step ran once per group and never failed (parse, score and assemble are one finishGroup); only the
    // scored group was delivered.
    for (const activity of ['prepareGroup', 'finishGroup']) {
      expect(m.get(`clotho_activity_attempts_total{activity="${activity}",outcome="completed"}`)).toBe(2);
    }
    expect(m.get('clotho_activity_attempts_total{activity="deliverToJsonl",outcome="completed"}')).toBe(1);
    expect([...m.keys()].filter((k) => k.startsWith('clotho_activity_retries_total'))).toEqual([
      'clotho_activity_retries_total{activity="generateTurn"}',
    ]);
    expect([...m.keys()].filter((k) => k.includes('outcome="failed"') && k.startsWith('clotho_activity_attempts_total'))).toHaveLength(1);

    expect(m.get('clotho_groups_total{environment="guess-number",status="delivered"}')).toBe(1);
    expect(m.get('clotho_groups_total{environment="guess-number",status="failed"}')).toBe(0);
    expect(m.get('clotho_groups_total{environment="guess-number",status="dropped",reason="scores_all_equal"}')).toBe(1);
    expect(m.get('clotho_groups_in_flight{environment="guess-number"}')).toBe(0);

    // Tokens: what the delivered group's masks train on, plus the dropped group's identical completions.
    const [line] = (await readFile(path, 'utf8')).trim().split('\n');
    const delivered = JSON.parse(line!) as ScoredDataGroup;
    const perGroup = delivered.masks.flat().filter((t) => t !== MASKED).length;
    expect(m.get('clotho_completion_tokens_total{activity="generateTurn"}')).toBe(2 * perGroup);
    expect(metrics.completionTokens()).toBe(2 * perGroup);
    expect(m.get('clotho_completion_tokens_per_second')).toBeCloseTo((2 * perGroup) / 60, 10);
    expect(metrics.inference.attempts).toEqual([3, 1]);

    expect((await fetch(`http://127.0.0.1:${server.port}/other`)).status).toBe(404);
  });
});
