import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { watchProgress } from '../../src/cli/progress.js';
import { SLOW_POLICY } from '../../src/cli/slow-collects.js';
import type { AtroposCollected, AtroposEnvRunInput } from '../../src/schema/atropos.js';
import type { StepOptions } from '../../src/schema/rollout.js';
import { atroposEnvRun } from '../../src/workflows/atropos-env-run.js';
import { workflowBundle } from '../../src/workers/bundle.js';
import { runClotho, waitFor } from '../support/cli.js';
import { testConnection, uniqueId, uniqueTaskQueue } from '../support/temporal.js';

const step: StepOptions = {
  startToCloseTimeoutMs: 120_000,
  heartbeatTimeoutMs: 10_000,
  initialIntervalMs: 100,
  backoffCoefficient: 1,
  maximumIntervalMs: 100,
  maximumAttempts: 1,
  local: false,
};

/** What a Python worker heartbeats while the environment's scoring hangs (the fields of issue 43's workers). */
const HUNG = { stack: ['env.py:40 in collect_trajectories', 'env.py:88 in score'], lastOutput: ['scoring item 3', 'sympy: simplifying'] };

describe('a collect far past the run’s usual time, on the progress line and in clotho inspect (real dev server)', () => {
  it('shows how long it has run, the usual time, and where the worker is, from its heartbeat', async () => {
    const temporal = await testConnection();
    const queue = uniqueTaskQueue('slow-collect');
    const activities = {
      async atroposNextItem({ cursor, count }: { cursor: number; count?: number }) {
        const items = Array.from({ length: Math.max(0, Math.min(cursor + (count ?? 1), 4) - cursor) }, (_, i) => ({ n: cursor + i }));
        return {
          cursor,
          item: items[0] ?? null,
          items,
          exhausted: cursor + items.length >= 4,
          fastForwarded: 0,
          fastForwardSeconds: 0,
          restoredFrom: null,
        };
      },
      async atroposCollect({ item, store }: { item: { n: number }; store: { key: string } }): Promise<AtroposCollected> {
        const context = Context.current();
        if (item.n === 3) {
          // Hangs, heartbeating as a Python worker does, until the test ends the run.
          const started = Date.now();
          for (;;) {
            context.heartbeat({ seconds: (Date.now() - started) / 1000, ...HUNG });
            await context.sleep(300);
          }
        }
        return {
          status: 'scored',
          list: false,
          groupRefs: [{ key: `${store.key}/group-0` }],
          scores: [[1, 0]],
          dropped: [],
          backlog: [],
          seconds: 0,
        };
      },
      async deliverToJsonl({ groups }: { groups: unknown[] }) {
        return groups.length;
      },
    };
    const native = await NativeConnection.connect({ address: temporal.address });
    const worker = await Worker.create({
      connection: native,
      namespace: temporal.namespace,
      taskQueue: queue,
      workflowBundle: await workflowBundle(),
      activities,
    });
    const runId = uniqueId('slow');
    const input: AtroposEnvRunInput = {
      runId,
      environment: 'fake',
      configDigest: 'd',
      totalGroups: 4,
      maxInFlight: 4,
      sink: { kind: 'jsonl', path: '/dev/null' },
      groupSize: 2,
      storeRoot: '/tmp',
      taskQueues: { workflows: queue, atropos: queue },
      steps: { next: step, collect: step, deliver: step },
      searchAttributes: false,
    };
    await worker.runUntil(async () => {
      const handle = await temporal.client.workflow.start(atroposEnvRun, {
        taskQueue: queue,
        workflowId: `clotho/${runId}/fake`,
        args: [input],
      });
      try {
        // The progress line, with the threshold lowered from 30 s to 1 s: items 0-2 take a moment, item 3 hangs.
        const lines: string[] = [];
        const abort = new AbortController();
        const io = { out: (line: string) => lines.push(line), err: () => undefined };
        const watching = watchProgress(handle, io, temporal.connection, abort.signal, { ...SLOW_POLICY, floorMs: 1_000 });
        await waitFor(
          () => lines.some((line) => line.includes('item 3: collect running')),
          60_000,
          'the hung collect on the progress line',
        );
        abort.abort();
        await watching.catch(() => undefined);
        expect(lines.find((line) => line.includes('item 3'))).toMatch(
          /^groups 3\/4 · 1 in flight · .* · item 3: collect running \d+\.\d s \(usual \d+\.\d s\) · at env\.py:88 in score$/,
        );

        const env = { TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace };
        const inspect = await runClotho(['inspect', `clotho/${runId}/fake/item-3`], env);
        expect(inspect.code, inspect.stderr).toBe(0);
        expect(inspect.stdout).toMatch(/atroposCollect\n\s+heartbeat: collect running \d+\.\d s\n/);
        expect(inspect.stdout).toContain(
          ['stack (innermost last):', '  env.py:40 in collect_trajectories', '  env.py:88 in score']
            .map((l) => `${' '.repeat(23)}${l}`)
            .join('\n'),
        );
        expect(inspect.stdout).toContain(
          ["the environment's last output:", '  scoring item 3', '  sympy: simplifying'].map((l) => `${' '.repeat(23)}${l}`).join('\n'),
        );
      } finally {
        await handle.terminate('test done');
      }
    });
    await native.close();
  });
});
