import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTokenizer, type Tokenizer } from '../../src/inference/tokenizer.js';
import { recordHistory } from '../support/atropos.js';
import { runClotho, spawnClotho, waitFor, type CliRun } from '../support/cli.js';
import { expectWellFormedGroup, readGroups } from '../support/groups.js';
import { temporalEnv, useScratch } from '../support/runs.js';
import { startScriptedOpenAI, type Responder, type ScriptedOpenAI } from '../support/scripted-openai.js';
import { uniqueId } from '../support/temporal.js';
import { descendants, isAlive, VERIFIERS_ENVS, verifiersPolicy, verifiersPython } from '../support/verifiers.js';

/**
 * `clotho process --verifiers`: environments written in verifiers' style (clients/python-verifiers/tests/envs) run
 * unchanged by verifiers 0.4.0 from PyPI on the real Python worker, every model call through Clotho's session against a
 * scripted model that takes token-id prompts, so the groups carry the exact ids the model generated and the rubric's
 * scores. One per kind: single-turn with a reward (a module), multi-turn with a task's tool server (a project folder),
 * and verifiers' bash harness in the subprocess runtime, its reward reading the runtime (a package).
 */
const scratch = useScratch('clotho-verifiers-process-');
let env: Record<string, string>;
let qwen: Tokenizer;

// A fresh clone installs the Python venv here (about 4 minutes), once.
beforeAll(async () => {
  env = { ...temporalEnv(), ...(await verifiersPython()).env };
  qwen = await loadTokenizer('qwen3');
}, 600_000);

/** `clotho process --verifiers <env>` against the scripted model, exact tokens (Qwen's tokenizer), subprocess runtime. */
function verifiersProcess(spec: string, model: ScriptedOpenAI, out: string, ...flags: string[]): string[] {
  return [
    'process',
    '--verifiers',
    join(VERIFIERS_ENVS, spec),
    '--client.base-url',
    model.baseUrl,
    '-m',
    'scripted-model',
    '--openai.tokenizer_name',
    'qwen3',
    '--env.agent.runtime.type',
    'subprocess',
    '--sampling.max-tokens',
    '64',
    '--store',
    scratch.path('store'),
    '--env.data_path_to_save_groups',
    out,
    ...flags,
  ];
}

/** The ids a sequence trained on: each run of generated positions. */
const generated = (masks: number[], tokens: number[]) => tokens.filter((_, i) => masks[i] !== -100);

describe('clotho process --verifiers', () => {
  it("writes a single-turn environment's groups with exact tokens and the rubric's scores, with the progress line", async () => {
    // The first sample of each task answers right, the second wrong.
    const policy = await verifiersPolicy((turn, call) => {
      const [, a, b] = /What is (\d+) \+ (\d+)/.exec(turn.prompt) ?? [];
      return { text: String(Number(a) + Number(b) + (call % 2)) };
    });
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: policy }));
    const out = scratch.path('arith.jsonl');
    const runId = uniqueId('verifiers');
    const args = verifiersProcess('arith_env.py', model, out, '--env.agent.harness.id', 'null', '-n', '2', '-r', '2', '-c', '2');
    const { code, stdout, stderr } = await runClotho([...args, '--env.run_id', runId], env);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('2 groups of 2 episodes of arith_env (verifiers)');
    expect(stdout).toMatch(
      /groups 2\/2 · 0 in flight · mean score 0\.500 · reward\/correct 0\.500 · metric\/brevity \d\.\d{3} · failed 0 · dropped 0/,
    );
    const groups = await readGroups(out);
    expect(groups).toHaveLength(2);
    const completions = model.requests.filter((r) => r.path === '/v1/completions');
    expect(completions).toHaveLength(4);
    for (const group of groups) {
      expect([...group.scores].sort()).toEqual([0, 1]);
      expectWellFormedGroup(group);
      group.tokens.forEach((tokens, i) => {
        // What the model generated, to the id: the answer and Qwen's end of turn, and the prompt as it was sent.
        const answer = group.messages![i]!.at(-1)!.content as string;
        expect(generated(group.masks[i]!, tokens)).toEqual([...qwen.encode(answer, { addSpecialTokens: false }), qwen.eos!.id]);
        const prompt = tokens.slice(0, tokens.length - generated(group.masks[i]!, tokens).length);
        expect(completions.some((r) => JSON.stringify((r.body as { prompt: number[] }).prompt) === JSON.stringify(prompt))).toBe(true);
      });
    }
    expect(await readFile(scratch.path('arith.html'), 'utf8')).toContain('2 groups');
    const inspect = await runClotho(['inspect', `clotho/${runId}/arith_env/item-0`], env);
    expect(inspect.stdout).toContain('verifiersEpisode');
    expect(inspect.stdout).toContain('scored');
    await recordHistory('verifiers-env-run.json', `clotho/${runId}/arith_env`);
    await recordHistory('verifiers-rollout-group-scored.json', `clotho/${runId}/arith_env/item-0`);
  }, 300_000);

  it('runs a multi-turn environment whose task serves a tool, the tool offered and its result in the messages', async () => {
    const policy = await verifiersPolicy((turn) => {
      const name = /code of (\w+)/.exec(turn.prompt)?.[1] ?? '';
      return turn.toolResults.length === 0
        ? { tool: 'codes_lookup', arguments: { name } }
        : { text: `The code is ${turn.toolResults[0]}.` };
    });
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: policy }));
    const out = scratch.path('lookup.jsonl');
    const args = verifiersProcess('lookup_env', model, out, '--env.agent.harness.id', 'null', '-n', '1', '-r', '2');
    const { code, stdout, stderr } = await runClotho(args, env);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('groups 1/1 · 0 in flight · mean score 1.000 · reward/found 1.000');
    const [group] = await readGroups(out);
    expect(group!.scores).toEqual([1, 1]);
    expect((group as { tools?: { function: { name: string } }[] }).tools?.map((t) => t.function.name)).toEqual(['codes_lookup']);
    const messages = group!.messages![0]!;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[2]!.content).toContain('A-17');
    // Two turns of one sequence: two runs of generated ids.
    const spans = expectWellFormedGroup(group!);
    expect(spans.map((s) => s.length)).toEqual([2, 2]);
  }, 300_000);

  it("runs verifiers' bash harness in the subprocess runtime, its reward reading the file the agent wrote there", async () => {
    const policy = await verifiersPolicy((turn) => {
      const word = /the word (\w+)/.exec(turn.prompt)?.[1] ?? '';
      return turn.toolResults.length === 0 ? { tool: 'bash', arguments: { command: `echo ${word} > answer.txt` } } : { text: 'done' };
    });
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: policy }));
    const out = scratch.path('workdir.jsonl');
    const { code, stdout, stderr } = await runClotho(verifiersProcess('workdir_env', model, out, '-n', '1', '-r', '2'), env);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('groups 1/1 · 0 in flight · mean score 1.000 · reward/wrote 1.000');
    const [group] = await readGroups(out);
    expect(group!.scores).toEqual([1, 1]);
    expect((group as { tools?: { function: { name: string } }[] }).tools?.map((t) => t.function.name)).toEqual(['bash', 'edit']);
  }, 300_000);

  it.each(['Python worker', 'command'] as const)(
    'finishes an episode whose %s was killed -9 mid-episode on the resumed run, sending no answered call again',
    async (victim) => {
      let command: CliRun | undefined;
      let namespace: { pid: number; args: string }[] = [];
      const policy = await verifiersPolicy((turn) => {
        const name = /code of (\w+)/.exec(turn.prompt)?.[1] ?? '';
        if (turn.toolResults.length === 0) return { tool: 'codes_lookup', arguments: { name } };
        // The episode's second call: the worker or its command is killed -9 with this call in flight (the task's
        // tool server running), and a resumed run's episode asks it again.
        if (command) {
          namespace = descendants(command.child.pid!);
          const python = namespace.find(({ args }) => args.includes('clotho_verifiers worker') && !args.includes('bwrap'));
          if (!python) throw new Error(`no verifiers worker under the command:\n${namespace.map((p) => p.args).join('\n')}`);
          process.kill(victim === 'command' ? command.child.pid! : python.pid, 'SIGKILL');
          command = undefined;
        }
        return { text: `The code is ${turn.toolResults[0]}.` };
      });
      const model = scratch.closeAfter(await startScriptedOpenAI({ responder: policy }));
      const out = scratch.path(`killed-${victim.replace(/ /g, '-')}.jsonl`);
      const runId = uniqueId('verifiers-kill');
      const args = [
        ...verifiersProcess('lookup_env', model, out, '--env.agent.harness.id', 'null', '-n', '1', '-r', '1'),
        '--env.run_id',
        runId,
      ];
      command = spawnClotho(args, env);
      const first = command;
      const code = await first.exited;
      if (victim === 'command') expect(code).toBe('SIGKILL');
      else {
        expect(code).toBe(1);
        expect(first.stderr()).toContain('the verifiers worker exited (');
      }
      // The worker's PID namespace (bwrap, its init, the worker and what verifiers started) died with it, or with
      // the command (bwrap's --die-with-parent): nothing outlived it.
      expect(namespace.length).toBeGreaterThan(2);
      const alive = () => namespace.filter(({ pid }) => isAlive(pid));
      await waitFor(() => alive().length === 0, 30_000, `the worker's processes to exit: ${JSON.stringify(alive())}`);
      const completions = () => model.requests.filter((r) => r.path === '/v1/completions');
      expect(completions()).toHaveLength(2);

      const resumed = await runClotho(args, env);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toContain('groups 1/1 · 0 in flight · mean score 1.000');
      const [group] = await readGroups(out);
      expect(group!.scores).toEqual([1]);
      // The first call (answered before the kill) came from the record; the one in flight at most once more.
      const asked = completions().map((r) => qwen.decode((r.body as { prompt: number[] }).prompt));
      expect(asked.filter((prompt) => !prompt.includes('<tool_response>'))).toHaveLength(1);
      expect(asked.filter((prompt) => prompt.includes('<tool_response>')).length).toBeLessThanOrEqual(2);
    },
    600_000,
  );

  it('clotho worker --verifiers --env.run_id finishes the run of a command killed -9 mid-episode', async () => {
    let command: CliRun | undefined;
    const policy = await verifiersPolicy((turn) => {
      const name = /code of (\w+)/.exec(turn.prompt)?.[1] ?? '';
      if (turn.toolResults.length === 0) return { tool: 'codes_lookup', arguments: { name } };
      command?.child.kill('SIGKILL');
      command = undefined;
      return { text: `The code is ${turn.toolResults[0]}.` };
    });
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: policy }));
    const out = scratch.path('worker.jsonl');
    const runId = uniqueId('verifiers-worker');
    const [, ...flags] = verifiersProcess('lookup_env', model, out, '--env.agent.harness.id', 'null', '-n', '1', '-r', '1');
    command = spawnClotho(['process', ...flags, '--env.run_id', runId], env);
    expect(await command.exited).toBe('SIGKILL');
    // The run's env-run waits in Temporal; a worker command on its queues finishes it, delivering to its JSONL.
    const worker = spawnClotho(['worker', ...flags, '--env.run_id', runId], env);
    try {
      await waitFor(
        async () => (await readFile(out, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean).length === 1,
        240_000,
        'the group',
      );
      expect((await readGroups(out))[0]!.scores).toEqual([1]);
      expect(worker.stdout()).toContain(`workers of run ${runId} polling`);
    } finally {
      worker.child.kill('SIGINT');
    }
    expect(await worker.exited).toBe(0);
  }, 600_000);

  it('retries an episode whose model server failed, as infrastructure, and never scores the failure', async () => {
    const policy = await verifiersPolicy(() => ({ text: '3' }));
    // Three failures: every attempt the session's server manager makes within the episode's first call.
    let failures = 3;
    const responder: Responder = (body, call) => (failures-- > 0 ? { status: 500 } : policy(body, call));
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder }));
    const out = scratch.path('outage.jsonl');
    const runId = uniqueId('verifiers-outage');
    const args = verifiersProcess('arith_env.py', model, out, '--env.agent.harness.id', 'null', '-n', '1', '-r', '1');
    const { code, stdout, stderr } = await runClotho([...args, '--env.run_id', runId], env);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('groups 1/1 · 0 in flight · mean score 1.000');
    expect((await readGroups(out))[0]!.scores).toEqual([1]);
    const inspect = await runClotho(['inspect', `clotho/${runId}/arith_env/item-0`], env);
    // The session answered the episode 503 and the attempt failed as such (VerifiersInfrastructure), not as a reward.
    expect(inspect.stdout).toContain('retry: attempt 1 failed (infrastructure): the model server failed: Internal Server Error');
  }, 300_000);

  it('fails the group of an episode that keeps raising with its Python traceback, after a retry that asked the model nothing again', async () => {
    const policy = await verifiersPolicy(() => ({ text: '7' }));
    const model = scratch.closeAfter(await startScriptedOpenAI({ responder: policy }));
    const out = scratch.path('broken.jsonl');
    const runId = uniqueId('verifiers-broken');
    const args = verifiersProcess('arith_env.py', model, out, '--env.agent.harness.id', 'null', '-n', '1', '-r', '1');
    const flags = ['--env.taskset.task.broken', 'true', '--steps.harness.maximum_attempts', '2', '--env.run_id', runId];
    const { code, stdout, stderr } = await runClotho([...args, ...flags], env);
    expect(code).toBe(1);
    expect(stdout).toContain('failed 1');
    expect(stderr).toContain('item 0 failed');
    // No group written (the file, if the sink made it, is empty).
    expect(await readFile(out, 'utf8').catch(() => '')).toBe('');
    // The second attempt's call was answered from the first's record: a raise is never the model's to pay for twice.
    expect(model.requests.filter((r) => r.path === '/v1/completions')).toHaveLength(1);
    const inspect = await runClotho(['inspect', `clotho/${runId}/arith_env/item-0`], env);
    expect(inspect.code).toBe(1);
    expect(inspect.stdout).toContain('retry: attempt 1 failed');
    expect(inspect.stdout).toContain('ValueError: the reward is broken on purpose');
    expect(inspect.stdout).toMatch(/Traceback|File ".*arith_env\.py"/);
  }, 300_000);

  it("refuses a flag verifiers refuses, with verifiers' own message, exit 2", async () => {
    const model = scratch.closeAfter(await startScriptedOpenAI());
    const args = verifiersProcess('arith_env.py', model, scratch.path('bad.jsonl'), '--env.taskset.bogus', '1');
    const { code, stderr } = await runClotho(args, env);
    expect(code).toBe(2);
    expect(stderr).toContain('--env.taskset.bogus');
    expect(stderr).toContain('Extra inputs are not permitted');
  }, 300_000);
});
