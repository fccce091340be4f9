import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { rolloutGroupId } from '../../src/workflows/messages.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { runClotho } from '../support/cli.js';
import { counterLog, counterScript, counterTools } from '../support/counter-tools.js';
import { startHarness, type Harness } from '../support/harness.js';
import type { Responder } from '../support/scripted-openai.js';

let harness: Harness;
const env = () => ({ TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: inject('temporalNamespace') });

/** Item 1 runs three turns with tools (two samples); item 0 calls a tool whose server stays down (two attempts). */
beforeAll(async () => {
  counterLog.reset();
  let respond: Responder = counterScript;
  harness = await startHarness({
    environment: counterTools,
    envConfig: { group_size: 2 },
    responder: (body, index) => respond(body, index),
  });
  await harness.temporal.client.workflow.execute(rolloutGroup, {
    taskQueue: harness.queues.workflows,
    workflowId: rolloutGroupId(harness.runId, counterTools.name, 1),
    args: [harness.groupInput(1, { maxTurns: 8, hooks: { setup: true, teardown: true } })],
  });
  const steps = harness.groupInput(0).steps;
  steps.tool = { ...steps.tool, maximumAttempts: 2 };
  respond = () => ({ choices: [{ text: '<tool_call>{"name": "broken", "arguments": {}}</tool_call>' }] });
  await harness.temporal.client.workflow
    .execute(rolloutGroup, {
      taskQueue: harness.queues.workflows,
      workflowId: rolloutGroupId(harness.runId, counterTools.name, 0),
      args: [harness.groupInput(0, { maxTurns: 4, steps, groupSize: 1 })],
    })
    .catch(() => undefined);
});
afterAll(() => harness?.close());

/** Step lines without their offset and duration (`   +0.215s      69 ms  generateTurn …` → `generateTurn …`). */
const stepLines = (stdout: string) =>
  stdout.split('\n').flatMap((line) => {
    const match = /^\s+\+\d+\.\d{3}s\s+(\d+ ms|\d+\.\d\d s) {2}(.*)$/.exec(line);
    return match ? [match[2]!] : [];
  });

describe('clotho inspect (real dev server, run as a child process)', () => {
  it("prints a tool-using group's turns, tool calls with outcomes, the retry with its error, and the scores", async () => {
    const { code, stdout, stderr } = await runClotho(['inspect', harness.runId, '1', '--store', harness.store.root], env());
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout.split('\n')[0]).toMatch(
      new RegExp(`^clotho/${harness.runId}/counter-tools/item-1 \\(rolloutGroup, run [\\w-]+\\): completed in `),
    );
    expect(stdout).toContain(`run ${harness.runId} · environment counter-tools · item 1 · group of 2 · up to 8 turns`);

    const steps = stepLines(stdout);
    // Every step of the group, in order; the tool calls of the two samples interleave, so they are checked per sample.
    expect(steps.filter((s) => !s.startsWith('callTool')).map((s) => s.replace(/:.*?( \[local\])?$/, '$1'))).toEqual([
      'setupGroup',
      'prepareGroup [local]',
      'generateTurn turn 0',
      'stepTurn turn 0 [local]',
      'generateTurn turn 1',
      'stepTurn turn 1 [local]',
      'generateTurn turn 2',
      'stepTurn turn 2 [local]',
      'finishGroup [local]',
      'teardownGroup',
    ]);
    expect(steps).toContain('generateTurn turn 0: 246 tokens, 4 tool calls, 2 still active');
    expect(steps).toContain('stepTurn turn 2: 0 still active [local]');
    for (const sample of [0, 1]) {
      expect(steps.filter((s) => s.includes(` sample ${sample} `))).toEqual([
        `callTool add({"x":2}) turn 0 sample ${sample} call 0 → ok: total 2`,
        `callTool add({"x":3}) turn 0 sample ${sample} call 1 → ok: total 5`,
        `callTool divide({"a":1,"b":0}) turn 1 sample ${sample} call 0 → tool_error: Error: division by zero`,
        `callTool flaky({}) turn 1 sample ${sample} call 1 → ok: ok [attempt 2]`,
        expect.stringMatching(
          new RegExp(
            `^callTool nope\\(\\{\\}\\) turn 1 sample ${sample} call 2 → unknown_tool: Error: unknown tool "nope"; available: add, divide`,
          ),
        ),
      ]);
    }
    // Each turn's calls sit between its generateTurn and its stepTurn.
    const at = (prefix: string) => steps.findIndex((s) => s.startsWith(prefix));
    for (const turn of [0, 1]) {
      const calls = steps.flatMap((s, i) => (s.includes(`) turn ${turn} sample`) ? [i] : []));
      expect(Math.min(...calls)).toBeGreaterThan(at(`generateTurn turn ${turn}`));
      expect(Math.max(...calls)).toBeLessThan(at(`stepTurn turn ${turn}`));
    }
    // The retried call: its failed attempt's error on the line beneath it.
    const lines = stdout.split('\n');
    const flaky = lines.flatMap((line, i) => (line.includes('callTool flaky') ? [i] : []));
    expect(flaky).toHaveLength(2);
    for (const i of flaky)
      expect(lines[i + 1]!.trim()).toBe('retry: attempt 1 failed (infrastructure): tool flaky failed: connection reset by tool server');

    expect(steps).toContain(
      'finishGroup: scores 1, 1 (tool_calls 5, tool_errors 1, unknown_tool_calls 1, invalid_tool_arguments 0, total 5); ' +
        `1256 tokens → ${harness.runId}/counter-tools/item-1/group [local]`,
    );
    expect(stdout).toContain('result: scored · scores 1, 1 · mean 1 · 3 turns · 10 tool calls');
    expect(stdout).toContain(`group ${harness.runId}/counter-tools/item-1/group (2 sequences):`);
    expect(stdout).toContain(
      '  sample 0: score 1 · 3 assistant turns · 5 tool results · turn rewards 0.5, -0.5, 0.5 · last reply "The total is 5."',
    );
  });

  it('prints a failed group by workflow id: the attempts, the final error, exit code 1', async () => {
    const workflowId = rolloutGroupId(harness.runId, counterTools.name, 0);
    const { code, stdout } = await runClotho(['inspect', workflowId], env());
    expect(code).toBe(1);
    expect(stdout.split('\n')[0]).toMatch(/\): failed in /);
    const lines = stdout.split('\n').map((l) => l.trim());
    const broken = lines.findIndex((l) => l.includes('callTool broken({}) turn 0 sample 0 call 0'));
    expect(lines[broken]).toMatch(/callTool broken\(\{\}\) turn 0 sample 0 call 0 \[attempt 2, FAILED\]$/);
    // Whose failure it was (issue 40.5): a tool server's.
    expect(lines[broken + 1]).toBe('retry: attempt 1 failed (infrastructure): tool broken failed: tool server unreachable');
    expect(lines[broken + 2]).toBe('error (infrastructure): tool broken failed: tool server unreachable');
    expect(stdout).toMatch(/^result: failed: .*tool broken failed: tool server unreachable$/m);
    expect(stdout).not.toContain('finishGroup');
  });

  it('names what it could not find', async () => {
    const { code, stderr } = await runClotho(['inspect', harness.runId, '7', '--store', harness.store.root], env());
    expect(code).toBe(1);
    expect(stderr).toContain(`no rollout group of run ${harness.runId}, item 7`);
  });
});
