import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScoredDataGroup } from '../../src/schema/scored-data.js';
import { arithmeticResponder, ATROPOS_ENVS, atroposPython } from '../support/atropos.js';
import { runClotho, spawnClotho, startClothoView, waitFor, type CliRun } from '../support/cli.js';
import { readGroups } from '../support/groups.js';
import { temporalEnv, useScratch } from '../support/runs.js';
import { startScriptedOpenAI } from '../support/scripted-openai.js';
import { testConnection, uniqueId } from '../support/temporal.js';

/** Debian's package, installed by scripts/ensure-chromium.mjs (as test/e2e/view.test.ts uses it). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const scratch = useScratch('clotho-atropos-view-');
const children: CliRun[] = [];
let env: Record<string, string>;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run \`node scripts/ensure-chromium.mjs\` (or set CHROMIUM_PATH)`);
  env = { ...temporalEnv(), ...(await atroposPython(scratch.path())).env };
  browser = await chromium.launch({ executablePath: CHROMIUM });
}, 300_000);
afterAll(async () => {
  await browser?.close();
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
});

describe("an Atropos run's groups in clotho runs, inspect and view", () => {
  it('shows each group its environment scored, with its messages and scores', async () => {
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: arithmeticResponder() }));
    const runId = uniqueId('atropos-view');
    const store = scratch.path('store');
    const out = scratch.path('arithmetic.jsonl');
    const args = ['process', '--atropos', join(ATROPOS_ENVS, 'arithmetic_env.py'), '--env.tokenizer_name', scratch.path()];
    args.push('--openai.base_url', model.baseUrl, '--env.total_steps', '2', '--env.run_id', runId);
    const processed = await runClotho([...args, '--env.data_path_to_save_groups', out, '--store', store], env);
    expect(processed.code).toBe(0);
    expect(await readGroups(out)).toHaveLength(2);
    // Under the attempt of its collect that wrote it (the first: nothing failed).
    const stored = join(store, runId, 'arithmetic_env', 'item-0', 'attempt-1', 'group-0.json');
    const first = JSON.parse(await readFile(stored, 'utf8')) as ScoredDataGroup;
    const text = (role: string) => String(first.messages![0]!.find((m) => m.role === role)!.content);
    const [question, answer] = [text('user'), text('assistant')];

    // By run and item: the group's workflow is found by its search attributes, its groups in the store.
    const inspect = await runClotho(['inspect', runId, '0', '--store', store], env);
    expect(inspect.code).toBe(0);
    expect(inspect.stdout).toContain(`clotho/${runId}/arithmetic_env/item-0 (atroposRolloutGroup`);
    expect(inspect.stdout).toContain('atroposCollect');
    expect(inspect.stdout).toContain('result: scored · scores 1, -1, -1, -1');
    expect(inspect.stdout).toContain(`group ${runId}/arithmetic_env/item-0/attempt-1/group-0 (4 sequences):`);
    expect(inspect.stdout).toContain(`sample 0: score 1 · 1 assistant turns · last reply ${JSON.stringify(answer)}`);

    const url = await startClothoView(['--run', runId, '--store', store, '--tokenizer', 'none'], env, children);
    const page = await browser.newPage();
    await page.goto(url);
    await page.waitForFunction(`document.querySelector('#summary').dataset.state === 'ready'`);
    expect(await page.locator('[data-group]').count()).toBe(2);
    expect(await page.getAttribute('[data-group="arithmetic_env/item-0"]', 'data-status')).toBe('scored');
    expect(await page.locator('[data-rollout^="arithmetic_env/item-0#"]').count()).toBe(4);
    await page.click('[data-rollout="arithmetic_env/item-0#0"]');
    await page.waitForSelector('#rollout[data-key="arithmetic_env/item-0#0"]');
    expect(await page.textContent('#rollout .msg.user pre')).toBe(question);
    expect(await page.textContent('#rollout .msg.assistant pre')).toBe(answer);
    expect(await page.textContent('#rollout [data-fact=score]')).toBe('1');
    await page.close();
  });

  it('lists a running Atropos run, shows groups without messages decoded from their tokens, and why a group was declined', async () => {
    // The third item's answer waits until the run has been seen listed: the run is open until then.
    let release = () => undefined as void;
    const listed = new Promise<void>((resolve) => (release = resolve));
    const answer = arithmeticResponder();
    const model = scratch.closeAfter(
      await startScriptedOpenAI({
        responder: async (body, call) => (call === 2 ? listed.then(() => answer(body, call)) : answer(body, call)),
      }),
    );
    const runId = uniqueId('atropos-tokens');
    const store = scratch.path('tokens-store');
    // As gsm8k_server.py's groups are under serve: tokens, no messages, and a group of equal scores not sent.
    const args = ['process', '--atropos', join(ATROPOS_ENVS, 'tokens_only_env.py'), '--env.tokenizer_name', scratch.path()];
    args.push('--openai.base_url', model.baseUrl, '--env.total_steps', '3', '--env.max_num_workers', '1', '--env.run_id', runId);
    args.push('--env.include_messages', 'false', '--env.ensure_scores_are_not_same', 'true');
    const running = spawnClotho([...args, '--env.data_path_to_save_groups', scratch.path('tokens.jsonl'), '--store', store], env);
    children.push(running);
    const open = async () => {
      const runs = await runClotho(['runs', '--json'], env);
      return runs.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((run) => run.runId === runId);
    };
    let found: Record<string, unknown> | undefined;
    await waitFor(async () => (found = await open()) !== undefined, 60_000, 'clotho runs to list the Atropos run');
    expect(found).toMatchObject({
      workflowId: `clotho/${runId}/tokens_only_env`,
      environment: 'tokens_only_env',
      kind: 'env-run',
      canFinish: true,
    });
    release();
    expect(await running.exited).toBe(0);

    const kept = await runClotho(['inspect', runId, '0', '--store', store], env);
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toMatch(/prompt \(decoded from its tokens\): ".*What is 1 \+ 10\?/);
    expect(kept.stdout).toMatch(/sample 0: score 1 · \d+ tokens, \d+ trained · reply \(decoded from its tokens\) "\\\\boxed\{11\}"/);
    expect(kept.stdout).toMatch(/sample 1: score -1 · \d+ tokens, \d+ trained · reply \(decoded from its tokens\) "\\\\boxed\{12\}"/);
    const declined = await runClotho(['inspect', runId, '2', '--store', store], env);
    expect(declined.code, declined.stderr).toBe(0);
    expect(declined.stdout).toContain('result: declined (identical scores)');

    // Visibility trails the workflows a little: the viewer's statuses come from it.
    const { client } = await testConnection();
    const ended = async () => {
      for await (const w of client.workflow.list({ query: `ClothoRunId = "${runId}"` }))
        if (w.workflowId.endsWith('/item-2')) return w.status.name === 'COMPLETED';
      return false;
    };
    await waitFor(ended, 30_000, 'visibility to list the declined group');
    const url = await startClothoView(['--run', runId, '--store', store, '--tokenizer', 'none'], env, children);
    const page = await browser.newPage();
    await page.goto(url);
    await page.waitForFunction(`document.querySelector('#summary').dataset.state === 'ready'`);
    expect(await page.getAttribute('[data-group="tokens_only_env/item-2"]', 'data-status')).toBe('dropped');
    expect(await page.textContent('[data-group="tokens_only_env/item-2"] .note')).toBe('identical scores');
    expect(await page.textContent('[data-group="tokens_only_env/item-0"] .note')).toMatch(
      /^no replies in its messages: decoded from its tokens/,
    );
    expect(await page.textContent('[data-group="tokens_only_env/item-0"]')).toContain('What is 1 + 10?');
    expect(await page.textContent('[data-rollout="tokens_only_env/item-0#0"]')).toContain('\\boxed{11}');
    await page.click('[data-rollout="tokens_only_env/item-0#0"]');
    await page.waitForSelector('#rollout[data-key="tokens_only_env/item-0#0"]');
    expect(await page.textContent('#rollout .msg.assistant pre')).toBe('\\boxed{11}');
    await page.close();
  }, 300_000);
});
