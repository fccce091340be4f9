import { Context } from '@temporalio/activity';
import { WorkflowFailedError } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import type { AtroposEvaluated, AtroposEvaluationInput } from '../../src/schema/atropos.js';
import { atroposEvaluation } from '../../src/workflows/atropos-evaluation.js';
import { causeOf } from '../../src/workflows/messages.js';
import { workflowBundle } from '../../src/workers/bundle.js';
import { testConnection, uniqueId, uniqueTaskQueue } from '../support/temporal.js';

/** Runs one atroposEvaluation whose `atroposEvaluate` fails its first `failures` attempts; the attempts it saw. */
async function evaluateFailing(failures: number, maximumAttempts: number) {
  const temporal = await testConnection();
  const queue = uniqueTaskQueue('atropos-evaluation');
  const attempts: number[] = [];
  const activities = {
    async atroposEvaluate(): Promise<AtroposEvaluated> {
      const { attempt } = Context.current().info;
      attempts.push(attempt);
      if (attempt <= failures) throw new Error(`evaluate raised on attempt ${attempt}`);
      return { result: null, metrics: { 'eval/attempt': attempt }, logged: null, seconds: 0 };
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
  const input: AtroposEvaluationInput = {
    runId: uniqueId('atropos-eval'),
    environment: 'fake',
    taskQueue: queue,
    evaluate: {
      startToCloseTimeoutMs: 10_000,
      initialIntervalMs: 50,
      backoffCoefficient: 1,
      maximumIntervalMs: 50,
      maximumAttempts,
      local: false,
    },
  };
  const outcome: { result?: AtroposEvaluated; error?: Error; attempts: number[] } = { attempts };
  try {
    const started = temporal.client.workflow.execute(atroposEvaluation, {
      taskQueue: queue,
      workflowId: `clotho/${input.runId}/fake/eval-0`,
      args: [input],
    });
    outcome.result = await worker.runUntil(started);
  } catch (error) {
    outcome.error = error as Error;
  } finally {
    await native.close();
  }
  return outcome;
}

describe('atroposEvaluation with its activity replaced, on the real dev server', () => {
  it("answers what the environment's evaluate produced, retried under the step's policy", async () => {
    const { result, attempts } = await evaluateFailing(1, 3);
    expect(attempts).toEqual([1, 2]);
    expect(result).toEqual({ result: null, metrics: { 'eval/attempt': 2 }, logged: null, seconds: 0 });
  });

  it('fails with the cause once the attempts run out', async () => {
    const { error, attempts } = await evaluateFailing(5, 2);
    expect(attempts).toEqual([1, 2]);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect(causeOf(error)).toBe('evaluate raised on attempt 2');
  });
});
