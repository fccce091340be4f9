import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import gsm8k from '../../environments/gsm8k/index.js';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import { envRun } from '../../src/workflows/env-run.js';
import { GSM8K_TEST, gsm8kItems, gsm8kResponder } from '../support/gsm8k-model.js';
import { startHarness, type Harness } from '../support/harness.js';
import { encodeChat } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';
import { recordHistory } from '../support/atropos.js';
import { startedBy } from '../../src/cli/versions.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const THINK = 'Think inside <think> </think> before you answer.';

describe("envRun with Atropos's thinking fields and worker_timeout on a real dev server", () => {
  it('puts the thinking prompt before the system prompt and asks every request for reasoning', async () => {
    harness = await startHarness({
      environment: gsm8k,
      envConfig: { data_path: GSM8K_TEST, group_size: 2, thinking_mode: true, reasoning_effort: 'low', custom_thinking_prompt: THINK },
      responder: gsm8kResponder((_, sample) => sample === 0),
    });
    const path = join(await mkdtemp(join(tmpdir(), 'clotho-jsonl-')), 'groups.jsonl');
    const sampling = { temperature: 1, topP: 1, reasoning: { effort: 'low' as const } };
    const result = await harness.temporal.client.workflow.execute(envRun, {
      taskQueue: harness.queues.workflows,
      workflowId: uniqueId('env-run'),
      args: [
        {
          runId: harness.runId,
          environment: 'gsm8k',
          totalGroups: 3,
          maxInFlight: 3,
          sink: { kind: 'jsonl', path },
          group: harness.groupInput(0, { sampling }),
        },
      ],
    });
    expect(result).toMatchObject({ completed: 3, delivered: 3, failed: 0 });

    const chats = harness.scripted.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as Record<string, unknown>);
    expect(chats).toHaveLength(3);
    for (const body of chats) {
      expect(body.reasoning).toEqual({ enabled: true, effort: 'low' });
      const [system] = body.messages as { role: string; content: string }[];
      expect(system!.role).toBe('system');
      expect(system!.content.startsWith(`${THINK}\n\n`)).toBe(true);
      expect(system!.content.length).toBeGreaterThan(THINK.length + 2);
    }

    const groups = (await readFile(path, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as ScoredDataGroup);
    const questions = new Set(
      gsm8kItems()
        .slice(0, 3)
        .map((item) => item.question),
    );
    for (const group of groups) {
      const [system, user] = group.messages![0]!;
      expect(system!.content).toMatch(new RegExp(`^${THINK.replace(/[<>/]/g, '\\$&')}\\n\\n`));
      expect(questions.has(user!.content as string)).toBe(true);
      // The trained prompt is the one the model saw, thinking prompt included.
      const prompt = encodeChat([system!, user!].map((m) => ({ role: m.role, content: m.content })));
      for (const tokens of group.tokens) expect(tokens.slice(0, prompt.length)).toEqual(prompt);
    }
  });

  it('drops a group that runs past its deadline as timeout, and the run goes on', async () => {
    const items = gsm8kItems();
    const answer = gsm8kResponder((_, sample) => sample === 0);
    harness = await startHarness({
      environment: gsm8k,
      envConfig: { data_path: GSM8K_TEST, group_size: 2 },
      // The model never answers item 1.
      responder: (body, call) => {
        const messages = ('messages' in body ? body.messages : []) as { role: string; content?: unknown }[];
        const user = messages.find((m) => m.role === 'user');
        return user?.content === items[1]!.question ? { hang: true } : answer(body, call);
      },
    });
    const path = join(await mkdtemp(join(tmpdir(), 'clotho-jsonl-')), 'groups.jsonl');
    const workflowId = uniqueId('env-run');
    const result = await harness.temporal.client.workflow.execute(envRun, {
      taskQueue: harness.queues.workflows,
      workflowId,
      // The memo of the version that started it, as every run Clotho starts has (its history is committed).
      ...startedBy(true),
      args: [
        {
          runId: harness.runId,
          environment: 'gsm8k',
          totalGroups: 4,
          maxInFlight: 4,
          groupTimeoutSeconds: 2,
          sink: { kind: 'jsonl', path },
          group: harness.groupInput(0),
        },
      ],
    });
    expect(result).toMatchObject({ completed: 4, delivered: 3, failed: 0, dropped: { timeout: 1 }, scoredGroups: 3, failures: [] });
    const delivered = (await readFile(path, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as ScoredDataGroup);
    expect(delivered.map((g) => items.findIndex((item) => item.question === g.messages![0]![1]!.content)).sort()).toEqual([0, 2, 3]);
    await recordHistory('env-run-loop-timeout.json', workflowId);
  });
});
