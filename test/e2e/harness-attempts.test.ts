import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harnessKey, type HarnessRolloutRecord } from '../../src/activities/harness.js';
import type { CallRecord } from '../../src/activities/harness-session.js';
import { ServerConfigSchema } from '../../src/config/schemas.js';
import { defineEnvironment, fromItems } from '../../src/env/define.js';
import { createServerManager, type ServerManager } from '../../src/inference/server-manager.js';
import { loadTokenizer, type Tokenizer } from '../../src/inference/tokenizer.js';
import { rolloutGroup } from '../../src/workflows/rollout-group.js';
import { startHarness, type Harness } from '../support/harness.js';
import { uniqueId } from '../support/temporal.js';

/**
 * Issue 38, finding 1, for harness rollouts: an attempt of `runHarness` that Temporal timed out must not go on beside
 * the next one, starting its agent and writing the rollout's records (`…/harness/sample-<s>/call-<k>`, `…/result`).
 * Here the agent's install (a real process, as mini-swe-agent's pip install is one) outlasts the heartbeat timeout.
 */

/** An agent of one model call: it writes the answer into its workspace and exits. */
const AGENT = String.raw`
import json, os, urllib.request
body = json.dumps({"model": os.environ["OPENAI_MODEL"], "messages": [{"role": "user", "content": "Say something."}]})
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body.encode(),
                                 headers={"content-type": "application/json"})
answer = json.load(urllib.request.urlopen(request, timeout=60))["choices"][0]["message"]["content"]
open("answer.txt", "w").write(answer)
`;

/** The install: 8 s, past the 2 s heartbeat timeout and the SDK's 5 s grace after it; once per process. */
let installing: Promise<unknown> | undefined;
const install = () => (installing ??= promisify(execFile)('sleep', ['8']));

const environment = defineEnvironment({
  name: 'slow-install',
  description: 'an agent whose install outlasts the heartbeat timeout',
  config: {},
  load: async () => fromItems([{ id: 'only' }]),
  prompt: () => [{ role: 'user', content: 'Say something.' }],
  harness: {
    agent: () => ({
      name: 'one-call',
      command: () => ['python3', '/sandbox/.agent/one-call.py'],
      files: { '.agent/one-call.py': AGENT },
      ensure: async () => void (await install()),
    }),
    workspace: () => ({ 'TASK.md': 'Say something.\n' }),
    task: () => 'Say something.',
    check: () => ({ command: ['cat', 'answer.txt'] }),
  },
  parse: (_completion, _item, { harness }) => harness?.check.passed ?? false,
  score: ({ parsed }) => (parsed ? 1 : 0),
});

let qwen: Tokenizer;
let manager: ServerManager | undefined;
let h: Harness;
/** Each model call gets its own answer, so that a record overwritten by another attempt shows. */
let answers = 0;
beforeAll(async () => {
  qwen = await loadTokenizer('qwen3');
  h = await startHarness({
    environment,
    responder: () => {
      const text = `answer ${++answers}`;
      const ids = [...qwen.encode(text, { addSpecialTokens: false }), qwen.eos!.id];
      return { choices: [{ text, tokenIds: ids, logprobs: ids.map(() => -0.5) }] };
    },
    continuation: () => ({ tokenizer: qwen, client: manager! }),
  });
  manager = createServerManager({
    servers: [ServerConfigSchema.parse({ base_url: h.scripted.baseUrl, server_type: 'openai', model_name: 'scripted' })],
  });
});
afterAll(async () => {
  manager?.stop();
  await h?.close();
});

describe('a harness rollout whose agent install outlasts the heartbeat timeout', () => {
  it('runs one attempt and one agent, and the records are that agent’s alone', async () => {
    const steps = h.groupInput(0).steps;
    steps.harness = { ...steps.harness, heartbeatTimeoutMs: 2000 };
    const input = h.groupInput(0, { groupSize: 1, maxTurns: 4, steps, harness: true });
    const workflowId = uniqueId('slow-install');
    const result = await h.temporal.client.workflow.execute(rolloutGroup, { taskQueue: h.queues.workflows, workflowId, args: [input] });
    const events = (await h.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const attempts = events.flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : []));
    const record = () => h.store.get<HarnessRolloutRecord>(harnessKey(input, 0, 'result'));
    const finished = await record();
    // A worker stops once every activity it runs has ended: an attempt Temporal gave up on included.
    await h.workers.shutdown();
    const call = await h.store.get<CallRecord>(harnessKey(input, 0, 'call-0'));

    // One attempt; one agent asked the model once; its answer is the record, the result, and what the check printed.
    expect({
      result: { status: result.status, scores: result.scores },
      attempts,
      answers,
      checked: finished.outcome.check.output,
      recorded: call.completion.text,
      resultAfter: (await record()).outcome.check.output,
    }).toEqual({
      result: { status: 'scored', scores: [1] },
      attempts: [1],
      answers: 1,
      checked: 'answer 1',
      recorded: 'answer 1',
      resultAfter: 'answer 1',
    });
  }, 120_000);
});
