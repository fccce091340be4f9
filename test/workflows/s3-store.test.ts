import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import type { S3Store } from '../../src/store/s3-store.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import type { WorkerSetup } from '../../src/workers/workers.js';
import { guessNumber } from '../support/environments.js';
import { startHarness, type Harness } from '../support/harness.js';
import { ensureS3ServerBinary, startS3Server, type S3Server } from '../support/s3-server.js';
import { uniqueId } from '../support/temporal.js';

const binary = await ensureS3ServerBinary();
if (binary.status === 'unreachable') console.warn(`S3 workflow tests skipped: ${binary.message}`);

let server: S3Server | undefined;
let harness: Harness<S3Store> | undefined;
beforeAll(async () => {
  if (binary.status !== 'ready') return;
  server = await startS3Server(binary.path);
  await server.createBucket('groups');
});
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});
afterAll(async () => {
  await server?.close();
});

/** Sample 0 guesses 50, then 45 (right for item 5, secret 45); sample 1 always says 10. */
const guesses = (body: { n?: number; messages?: unknown }) => {
  const messages = (body.messages ?? []) as { role: string; content?: unknown }[];
  const turns = messages.filter((m) => m.role === 'assistant').length;
  const first = String(messages.find((m) => m.role === 'assistant')?.content ?? '');
  const n = body.n ?? 1;
  if (turns === 0) return { choices: Array.from({ length: n }, (_, i) => ({ text: i === 0 ? '50' : '10' })) };
  return { choices: [{ text: first === '50' ? '45' : '10' }] };
};

describe.skipIf(binary.status !== 'ready')('rollout groups on an S3 store (a real S3 server)', () => {
  it('retries the step that met the store down in the middle of a group, by its policy, and scores as without the outage', async () => {
    const calls: string[] = [];
    const failures: { name: string; message: string }[] = [];
    // The server goes down as the second turn's generation starts (turn 0's records are in the bucket by then) and
    // comes back once a step has failed on it: that step's retry finds it again.
    const wrap: NonNullable<WorkerSetup['wrapActivities']> = (activities) =>
      Object.fromEntries(
        Object.entries(activities).map(([name, fn]) => [
          name,
          async (...args: never[]) => {
            calls.push(name);
            if (name === 'generateTurn' && calls.filter((c) => c === 'generateTurn').length === 2) await server!.stop();
            try {
              return await (fn as (...a: never[]) => Promise<unknown>)(...args);
            } catch (error) {
              failures.push({ name, message: String(error) });
              if (failures.length === 1) await server!.start();
              throw error;
            }
          },
        ]),
      ) as typeof activities;
    const store = server!.store(`s3://groups/${uniqueId('outage')}`);
    harness = await startHarness({
      environment: guessNumber,
      envConfig: { group_size: 2 },
      responder: guesses,
      wrapActivities: wrap,
      store,
    });
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('rg'),
      args: [harness.groupInput(5, { maxTurns: 4 })],
    });

    // The step failed on the store (a connection refused), was retried, and nothing became a score.
    expect(failures).toEqual([{ name: 'generateTurn', message: expect.stringMatching(/ECONNREFUSED|connect/i) }]);
    expect(calls.filter((c) => c === 'generateTurn')).toHaveLength(5);
    expect(result.status).toBe('scored');
    expect(result.scores).toEqual([1, -1]);
    expect(result.turns).toBe(4);
    const group = await harness.store.get<ScoredDataGroup>(result.group!);
    expect(group.scores).toEqual([1, -1]);
    expect(group.messages![0]!.map((m) => `${m.role}:${m.content}`)).toEqual([
      'user:Guess my number between 0 and 100. Answer with a number.',
      'assistant:50',
      'user:lower',
      'assistant:45',
    ]);
  });
});
