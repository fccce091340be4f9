import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import gsm8k from '../../environments/gsm8k/index.js';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import { MASKED, MASKED_LOGPROB, SCORED_DATA_FIELDS } from '../../src/schema/scored-data.js';
import { envRun } from '../../src/workflows/env-run.js';
import { GSM8K_TEST, gsm8kItems, gsm8kResponder } from '../support/gsm8k-model.js';
import { startHarness, type Harness } from '../support/harness.js';
import { encodeChat } from '../support/scripted-openai.js';
import { waitFor } from '../support/cli.js';
import { uniqueId } from '../support/temporal.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('envRun with GSM8K on a real dev server', () => {
  it('runs every item once, drops all-equal groups with their reason, and writes the rest as Atropos groups', async () => {
    // Items 1 and 4 are answered right by every sample: equal scores, dropped when ensure_scores_are_not_same is on.
    const allRight = new Set([1, 4]);
    harness = await startHarness({
      environment: gsm8k,
      envConfig: { data_path: GSM8K_TEST, group_size: 4 },
      responder: gsm8kResponder((item, sample) => allRight.has(item) || sample % 2 === 0),
    });
    const path = join(await mkdtemp(join(tmpdir(), 'clotho-jsonl-')), 'groups.jsonl');
    const result = await harness.temporal.client.workflow.execute(envRun, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('env-run'),
      args: [
        {
          runId: harness.runId,
          environment: 'gsm8k',
          totalGroups: 8,
          maxInFlight: 3,
          sink: { kind: 'jsonl', path },
          group: { ...harness.groupInput(0, { groupSize: 4, ensureScoresAreNotSame: true }) },
        },
      ],
    });
    expect(result).toMatchObject({ nextItem: 8, completed: 8, delivered: 6, failed: 0, dropped: { scores_all_equal: 2 } });

    // Rollouts are found in the Temporal UI by environment, run and item, with their status and mean score.
    const query = `ClothoRunId = "${harness.runId}" AND ClothoEnvironment = "gsm8k" AND ClothoItemIndex = 4`;
    let found: { workflowId: string; searchAttributes: Record<string, unknown> }[] = [];
    await waitFor(
      async () => {
        found = [];
        for await (const w of harness!.temporal.client.workflow.list({ query }))
          found.push({ workflowId: w.workflowId, searchAttributes: w.searchAttributes as Record<string, unknown> });
        return found.length === 1 && JSON.stringify(found[0]!.searchAttributes.ClothoStatus) === '["dropped"]';
      },
      30_000,
      'the rollout of item 4 in visibility',
    );
    expect(found[0]!.workflowId).toBe(`clotho/${harness.runId}/gsm8k/item-4`);
    expect(found[0]!.searchAttributes.ClothoMeanScore).toEqual([1]);

    const lines = (await readFile(path, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as ScoredDataGroup);
    expect(lines).toHaveLength(6);
    const items = gsm8kItems();
    const delivered = lines.map((g) => items.findIndex((item) => item.question === g.messages![0]![1]!.content));
    expect(delivered.sort()).toEqual([0, 2, 3, 5, 6, 7]);
    for (const group of lines) {
      expect(Object.keys(group)).toEqual(SCORED_DATA_FIELDS);
      expect(group.scores).toEqual([1, -1, 1, -1]);
      const prompt = encodeChat(group.messages![0]!.slice(0, 2).map((m) => ({ role: m.role, content: m.content })));
      for (const [i, tokens] of group.tokens.entries()) {
        expect(tokens.slice(0, prompt.length)).toEqual(prompt);
        expect(group.masks[i]!.slice(0, prompt.length).every((m) => m === MASKED)).toBe(true);
        expect(group.masks[i]!.slice(prompt.length)).toEqual(tokens.slice(prompt.length));
        expect(group.inference_logprobs![i]!.slice(0, prompt.length).every((l) => l === MASKED_LOGPROB)).toBe(true);
        expect(group.inference_logprobs![i]!.slice(prompt.length).every((l) => l < 0)).toBe(true);
      }
      expect(group.generation_params).toMatchObject({ temperature: 1, top_p: 1 });
    }
  });

  it('delivers groups that finish while an earlier delivery is still being written', async () => {
    // A slow sink: every group finishes during some delivery, the case where a finished group could be left behind.
    const slowSink: Parameters<typeof startHarness>[0]['wrapActivities'] = (activities) =>
      Object.fromEntries(
        Object.entries(activities).map(([name, fn]) => [
          name,
          name === 'deliverToJsonl'
            ? async (...args: never[]) => {
                await new Promise((resolve) => setTimeout(resolve, 300));
                return fn(...args);
              }
            : fn,
        ]),
      ) as typeof activities;
    harness = await startHarness({
      environment: gsm8k,
      envConfig: { data_path: GSM8K_TEST, group_size: 2 },
      responder: gsm8kResponder((_, sample) => sample === 0),
      wrapActivities: slowSink,
    });
    const path = join(await mkdtemp(join(tmpdir(), 'clotho-jsonl-')), 'groups.jsonl');
    const result = await harness.temporal.client.workflow.execute(envRun, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('env-run'),
      args: [
        {
          runId: harness.runId,
          environment: 'gsm8k',
          totalGroups: 12,
          maxInFlight: 12,
          sink: { kind: 'jsonl', path },
          group: harness.groupInput(0),
        },
      ],
    });
    expect(result).toMatchObject({ completed: 12, delivered: 12, failed: 0 });
    expect((await readFile(path, 'utf8')).trim().split('\n')).toHaveLength(12);
  });

  it('starts the group that takes a freed slot before, and in the same workflow task as, the delivery of the group that freed it', async () => {
    harness = await startHarness({
      environment: gsm8k,
      envConfig: { data_path: GSM8K_TEST, group_size: 2 },
      responder: gsm8kResponder((_, sample) => sample === 0),
    });
    const path = join(await mkdtemp(join(tmpdir(), 'clotho-jsonl-')), 'groups.jsonl');
    const workflowId = uniqueId('env-run');
    const result = await harness.temporal.client.workflow.execute(envRun, {
      taskQueue: harness.queues.workflows,
      workflowId,
      args: [
        {
          runId: harness.runId,
          environment: 'gsm8k',
          totalGroups: 4,
          maxInFlight: 1,
          sink: { kind: 'jsonl', path },
          group: harness.groupInput(0),
        },
      ],
    });
    expect(result).toMatchObject({ completed: 4, delivered: 4, failed: 0 });
    expect((await readFile(path, 'utf8')).trim().split('\n')).toHaveLength(4);

    // One group at a time: delivery k carries item k, and item k + 1 takes the slot item k freed.
    const events = (await harness.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const starts = events.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
    const deliveries = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverToJsonl');
    expect(starts.map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes!.workflowId)).toEqual(
      [0, 1, 2, 3].map((i) => `clotho/${harness!.runId}/gsm8k/item-${i}`),
    );
    expect(deliveries).toHaveLength(4);
    for (let k = 0; k < 3; k++) {
      const [start, delivery] = [starts[k + 1]!, deliveries[k]!];
      expect(String(start.startChildWorkflowExecutionInitiatedEventAttributes!.workflowTaskCompletedEventId)).toBe(
        String(delivery.activityTaskScheduledEventAttributes!.workflowTaskCompletedEventId),
      );
      expect(Number(start.eventId)).toBeLessThan(Number(delivery.eventId));
    }
  });
});
