import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toolRecordKey, type ToolRecord } from '../../src/activities/tool-calls.js';
import { defineEnvironment } from '../../src/env/define.js';
import { defineTool } from '../../src/env/tools.js';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import { FileSystemStore } from '../../src/store/trajectory-store.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { startHarness, type Harness } from '../support/harness.js';
import { assistantTurns } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';

/**
 * Issue 38, finding 1, for tool calls: a `callTool` attempt that Temporal timed out (here a tool that works
 * synchronously, so the activity cannot heartbeat) may still finish after the next attempt ran the call and recorded
 * it. The record must stay the one the next attempt wrote: it is what the history shows and what the model saw.
 */

/** Resolves once the record of the call is written by the second execution; the first execution waits for it. */
let secondRecorded: Promise<void> = Promise.resolve();
let executions = 0;

/** A store that says when the call's second execution is recorded. */
class WatchedStore extends FileSystemStore {
  onSecond: () => void = () => undefined;
  override async put(key: string, value: unknown) {
    const ref = await super.put(key, value);
    if ((value as Partial<ToolRecord>).content === 'execution 2') this.onSecond();
    return ref;
  }
}

/** Stamps the trajectory: its first execution works 1.5 s without yielding, then answers after the second did. */
const stamp = defineTool({
  name: 'stamp',
  description: 'Stamps the document',
  parameters: z.object({}),
  async execute() {
    const execution = ++executions;
    if (execution === 1) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
      await secondRecorded;
    }
    return `execution ${execution}`;
  },
});

const stamping = defineEnvironment({
  name: 'stamping',
  description: 'one tool call',
  config: {},
  load: async () => ({ size: 1, get: () => ({}) }),
  prompt: () => [{ role: 'user', content: 'Stamp it.' }],
  tools: () => [stamp],
  step: ({ toolResults }) => ({ messages: [], done: toolResults.length === 0 }),
  parse: (completion) => completion,
  score: () => 1,
});

let harness: Harness<WatchedStore> | undefined;
let root: string | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  if (root) await rm(root, { recursive: true, force: true });
});

describe('a tool call whose attempt timed out while the tool worked', () => {
  it('keeps the record of the attempt that completed: the history, the store and the trajectory agree', async () => {
    root = await mkdtemp(join(tmpdir(), 'clotho-tool-attempts-'));
    const store = new WatchedStore(root);
    secondRecorded = new Promise((resolve) => (store.onSecond = resolve));
    harness = await startHarness({
      environment: stamping,
      store,
      responder: (body) => ({
        choices: [
          assistantTurns(body) === 0 ? { text: '<tool_call>{"name": "stamp", "arguments": {}}</tool_call>' } : { text: 'Stamped.' },
        ],
      }),
    });
    const input = harness.groupInput(0, { groupSize: 1, maxTurns: 2 });
    input.steps.tool = { ...input.steps.tool!, heartbeatTimeoutMs: 1000 };
    const workflowId = uniqueId('tool-attempts');
    const result = await harness.temporal.client.workflow.execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId,
      args: [input],
    });
    const events = (await harness.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const completed = events.flatMap((e) =>
      e.activityTaskCompletedEventAttributes?.result?.payloads?.[0]?.data
        ? [JSON.parse(Buffer.from(e.activityTaskCompletedEventAttributes.result.payloads[0].data).toString()) as { content?: string }]
        : [],
    );
    // Every activity has ended once the workers have stopped: the timed-out attempt's tool included.
    await harness.workers.shutdown();
    const record = await store.get<ToolRecord>(toolRecordKey({ ...input, turn: 0, sample: 0, call: 0 }));
    const group = await store.get<ScoredDataGroup>(result.group!);

    expect(executions).toBe(2);
    expect({
      history: completed.flatMap((c) => (c.content === undefined ? [] : [c.content])),
      record: record.content,
      trajectory: group.messages![0]!.filter((m) => m.role === 'tool').map((m) => m.content),
    }).toEqual({ history: ['execution 2'], record: 'execution 2', trajectory: ['execution 2'] });
  });
});
