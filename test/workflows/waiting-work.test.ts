import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchProgress } from '../../src/cli/progress.js';
import { waitingWatcher, type WaitingWork } from '../../src/cli/waiting-work.js';
import { envRun } from '../../src/workflows/env-run.js';
import { waitFor } from '../support/cli.js';
import { counterLog, counterTools } from '../support/counter-tools.js';
import { startHarness, type Harness } from '../support/harness.js';
import { assistantTurns } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  counterLog.reset();
});

describe('work waiting on a retry, as the progress line shows it (real dev server)', () => {
  it('finds a tool call waiting for its next attempt in a run’s groups in flight, and says so on the progress line', async () => {
    harness = await startHarness({
      environment: counterTools,
      envConfig: { group_size: 1 },
      responder: (body) => ({
        choices: [{ text: assistantTurns(body) === 0 ? '<tool_call>{"name": "flaky", "arguments": {}}</tool_call>' : '0' }],
      }),
    });
    const steps = harness.groupInput(0).steps;
    // The flaky tool's first attempt fails; its next one waits a minute, long enough to be seen waiting.
    steps.tool = { ...steps.tool, initialIntervalMs: 60_000, maximumIntervalMs: 60_000, maximumAttempts: 3 };
    const workflowId = uniqueId('env-run-waiting');
    const handle = await harness.temporal.client.workflow.start(envRun, {
      taskQueue: harness.queues.workflows,
      workflowId,
      args: [
        {
          runId: harness.runId,
          environment: 'counter-tools',
          totalGroups: 1,
          maxInFlight: 1,
          sink: { kind: 'jsonl', path: join(await mkdtemp(join(tmpdir(), 'clotho-waiting-')), 'groups.jsonl') },
          group: harness.groupInput(0, { maxTurns: 3, steps, hooks: { setup: true, teardown: false } }),
        },
      ],
    });
    try {
      const look = waitingWatcher(harness.temporal.client.workflow, workflowId);
      let waiting: WaitingWork[] = [];
      await waitFor(async () => (waiting = await look()).length > 0, 60_000, 'the retried tool call to be seen waiting');
      expect(waiting).toEqual([
        {
          workflowId: `clotho/${harness.runId}/counter-tools/item-0`,
          waits: 'retry',
          what: 'tool call',
          why: 'tool flaky failed: connection reset by tool server',
          at: expect.any(Number),
          failure: { type: expect.any(String), message: expect.stringContaining('connection reset by tool server'), attempt: 1 },
        },
      ]);
      expect(waiting[0]!.at! - Date.now()).toBeGreaterThan(30_000);

      const lines: string[] = [];
      const abort = new AbortController();
      const watching = watchProgress(
        handle,
        { out: (line) => lines.push(line), err: () => undefined },
        harness.temporal.connection,
        abort.signal,
      );
      await waitFor(() => lines.length > 0, 30_000, 'a progress line');
      abort.abort();
      await watching.catch(() => undefined);
      expect(lines[0]).toMatch(
        /^groups 0\/1 · 1 in flight · .* · 1 waiting to be retried \(tool call tool flaky failed: connection reset by tool server, next attempt in \d+ s\)$/,
      );
    } finally {
      await handle.terminate('test done');
    }
  });
});
