import { WorkflowNotFoundError } from '@temporalio/client';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClotho, spawnClotho, waitFor } from '../support/cli.js';
import { GSM8K_TEST, gsm8kItems, gsm8kResponder, gsm8kCommand } from '../support/gsm8k-model.js';
import { completeLines, readGroups } from '../support/groups.js';
import { temporalEnv as env } from '../support/runs.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { testConnection, uniqueId } from '../support/temporal.js';
import { rolloutGroupId } from '../../src/workflows/messages.js';

let model: ScriptedOpenAI;
let dir: string;

beforeAll(async () => {
  // 60 ms per call so that a run of a dozen groups is still going when the crash test kills it.
  model = await startScriptedOpenAI({ responder: gsm8kResponder((_, sample) => sample === 0, 60) });
  dir = await mkdtemp(join(tmpdir(), 'clotho-process-'));
});
afterAll(() => model.close());

const questionIndex = () => new Map(gsm8kItems().map((item, i) => [item.question, i]));

describe('clotho process', () => {
  it('writes Atropos-shaped groups to JSONL and an HTML page beside it', async () => {
    const out = join(dir, 'gsm8k.jsonl');
    const { code, stdout, stderr } = await runClotho(
      gsm8kCommand('process', model.baseUrl, {
        'env.total_steps': 5,
        'env.group_size': 3,
        'env.data_path_to_save_groups': out,
        store: join(dir, 'store'),
      }),
      env(),
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('groups 5/5');
    const groups = await readGroups(out);
    expect(groups).toHaveLength(5);
    for (const group of groups) expect(group.scores).toEqual([1, -1, -1]);
    const html = await readFile(join(dir, 'gsm8k.html'), 'utf8');
    expect(html).toContain('5 groups');
    expect(html).toContain(gsm8kItems()[0]!.question.slice(0, 30).replace(/'/g, '&#39;').slice(0, 20));
  });

  it('names the flag that is wrong, and what it expected', async () => {
    const { code, stderr } = await runClotho(['process', 'gsm8k', '--env.group_size', 'x', '--env.grup_size', '3'], env());
    expect(code).toBe(2);
    expect(stderr).toContain('--env.group_size');
    expect(stderr).toMatch(/--env\.grup_size.*did you mean --env\.group_size/);
  });

  it('delivers every item exactly once when the process is killed -9 mid-run and started again', async () => {
    const runId = uniqueId('crash');
    const out = join(dir, `${runId}.jsonl`);
    const args = gsm8kCommand('process', model.baseUrl, {
      'env.total_steps': 16,
      'env.group_size': 2,
      'env.max_groups_in_flight': 2,
      'steps.generate.heartbeat_timeout': 5,
      'env.run_id': runId,
      'env.data_path_to_save_groups': out,
      store: join(dir, 'store'),
    });
    const first = spawnClotho(args, env());
    await waitFor(async () => (await completeLines(out)) >= 3, 60_000, 'the first groups');
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const before = (await readGroups(out)).length;
    expect(before).toBeLessThan(16);

    const second = await runClotho(args, env());
    expect(second.stderr).toBe('');
    expect(second.code).toBe(0);
    const index = questionIndex();
    const delivered = (await readGroups(out)).map((g) => index.get(String(g.messages![0]![1]!.content)));
    expect(delivered).toHaveLength(16);
    expect(new Set(delivered).size).toBe(16);
    expect([...delivered].sort((a, b) => a! - b!)).toEqual(Array.from({ length: 16 }, (_, i) => i));
  });

  it('keeps groups beyond the server’s slots started and waiting, and never sends it more calls at once', async () => {
    // Each call is held until the test has seen every group of the first wave running, two of them waiting for a slot.
    const answer = gsm8kResponder(() => true);
    let open = 0;
    let most = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held = await startScriptedOpenAI({
      responder: async (body, call) => {
        most = Math.max(most, ++open);
        await released;
        open--;
        return answer(body, call);
      },
    });
    try {
      const runId = uniqueId('overlap');
      const out = join(dir, `${runId}.jsonl`);
      const run = spawnClotho(
        gsm8kCommand('process', held.baseUrl, {
          'env.total_steps': 6,
          'env.group_size': 2,
          'env.max_groups_in_flight': 4,
          'openai.num_max_requests_at_once': 2,
          'env.run_id': runId,
          'env.data_path_to_save_groups': out,
          store: join(dir, 'store'),
        }),
        env(),
      );
      const { client } = await testConnection();
      const running = async (item: number) => {
        try {
          const { status } = await client.workflow.getHandle(rolloutGroupId(runId, 'gsm8k', item)).describe();
          return status.name === 'RUNNING';
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) return false;
          throw error;
        }
      };
      await waitFor(async () => open === 2 && (await running(2)) && (await running(3)), 60_000, 'four groups running, two calls held');
      expect(await Promise.all([0, 1, 2, 3].map(running))).toEqual([true, true, true, true]);
      expect(most).toBe(2);
      release();
      expect(await run.exited).toBe(0);
      expect(run.stderr()).toBe('');
      expect(run.stdout()).toContain('groups 6/6');
      expect(await readGroups(out)).toHaveLength(6);
      expect(most).toBe(2);
    } finally {
      release();
      await held.close();
    }
  });

  it('runs on embedded defaults: with no --openai.base_url it starts the local engine and stops it at the end', async () => {
    const out = join(dir, 'embedded.jsonl');
    const { code, stdout, stderr } = await runClotho(
      [
        'process',
        'gsm8k',
        '--env.data_path',
        GSM8K_TEST,
        '--env.total_steps',
        '2',
        '--env.group_size',
        '2',
        '--env.max_token_length',
        '24',
        '--env.data_path_to_save_groups',
        out,
        '--store',
        join(dir, 'store'),
      ],
      env(),
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('groups 2/2');
    for (const group of await readGroups(out)) {
      for (const [i, tokens] of group.tokens.entries()) {
        const generated = group.masks[i]!.filter((m) => m !== -100);
        expect(generated.length).toBeGreaterThan(0);
        expect(generated.length).toBeLessThanOrEqual(24);
        // The Qwen chat template's generation prompt ends with "<|im_start|>assistant\n" before the first trained token.
        const first = group.masks[i]!.findIndex((m) => m !== -100);
        expect(tokens.slice(first - 3, first)).toEqual([151644, 77091, 198]);
        expect(group.inference_logprobs![i]!.slice(first).every((l) => l <= 0)).toBe(true);
      }
    }
  });
});
