/**
 * What a harness rollout's session costs per model call (issue 27): the proxy (its HTTP over the Unix socket, the
 * prompt rendered with the policy's chat template and sent as token ids, the exact-token bookkeeping) and the recording
 * (each call written to the store before its answer), against the same agent calling the same scripted model directly.
 *
 * `--episodes` agent episodes of `--calls` calls each, one after another, in this process: the agent is a loop that
 * appends the answer and an observation of `--observation` characters to its conversation, as mini-swe-agent does.
 * Each is run three ways: direct (agent → model server's chat API), through a live session (agent → session → model
 * server's token-id completions, every call recorded), and through a session replaying those records (the model is
 * not asked). The model server and the agent run in this process too, so each line is the CPU of the whole; the
 * difference between the session's line and the direct one is what the session adds.
 *
 * Run: npm run bench:harness [-- --episodes 10 --calls 20 --observation 600]
 */
import { request } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { serveSession } from '../../src/activities/harness.js';
import { HarnessSession } from '../../src/activities/harness-session.js';
import { ServerConfigSchema } from '../../src/config/schemas.js';
import { createServerManager } from '../../src/inference/server-manager.js';
import { loadTokenizer } from '../../src/inference/tokenizer.js';
import { FileSystemStore } from '../../src/store/trajectory-store.js';
import { startScriptedOpenAI } from '../../test/support/scripted-openai.js';

const { values } = parseArgs({
  options: {
    episodes: { type: 'string', default: '10' },
    calls: { type: 'string', default: '20' },
    observation: { type: 'string', default: '600' },
  },
});
const EPISODES = Number(values.episodes);
const CALLS = Number(values.calls);
const OBSERVATION = 'x'.repeat(Number(values.observation) - 40);
const ANSWER = 'THOUGHT: I look at the next file.\n\n```mswea_bash_command\nnl -ba src/module.py | sed -n 1,80p\n```';

type Message = { role: string; content: string };
type Post = (body: unknown) => Promise<{ choices: { message: { content: string } }[] }>;

/** An agent's episode: each answer and an observation appended, as mini-swe-agent's loop does. */
async function episode(post: Post, id: number): Promise<void> {
  const messages: Message[] = [
    { role: 'system', content: 'You are a helpful assistant that can interact with a computer.' },
    { role: 'user', content: `Please solve this issue (${id}): the tests in test_module.py fail.` },
  ];
  for (let call = 0; call < CALLS; call++) {
    const answer = await post({ model: 'policy', messages });
    messages.push({ role: 'assistant', content: answer.choices[0]!.message.content });
    messages.push({ role: 'user', content: `<returncode>0</returncode>\n<output>\n${call}: ${OBSERVATION}\n</output>` });
  }
}

/** POSTs JSON with node's http client, over TCP or a Unix socket. */
function poster(target: { socketPath: string } | { host: string; port: number }, path: string): Post {
  return (body) =>
    new Promise((resolve, reject) => {
      const text = JSON.stringify(body);
      const req = request({ ...target, path, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          if (res.statusCode !== 200) reject(new Error(`${res.statusCode}: ${JSON.stringify(json)}`));
          else resolve(json);
        });
      });
      req.on('error', reject);
      req.end(text);
    });
}

/** CPU milliseconds of this process per call while `work` runs. */
async function cpuPerCall(work: () => Promise<void>): Promise<{ cpu: number; wall: number }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await work();
  const used = process.cpuUsage(cpu);
  const calls = EPISODES * CALLS;
  return { cpu: (used.user + used.system) / 1000 / calls, wall: (performance.now() - started) / calls };
}

const tokenizer = await loadTokenizer('qwen3');
const answerIds = [...tokenizer.encode(ANSWER, { addSpecialTokens: false }), tokenizer.eos!.id];
const model = await startScriptedOpenAI({
  responder: () => ({ choices: [{ text: ANSWER, tokenIds: answerIds, logprobs: answerIds.map(() => -0.5) }] }),
});
const modelUrl = new URL(model.baseUrl);
const manager = createServerManager({
  servers: [ServerConfigSchema.parse({ base_url: model.baseUrl, server_type: 'openai', model_name: 'scripted' })],
});
const dir = await mkdtemp(join(tmpdir(), 'clotho-bench-harness-'));
const store = new FileSystemStore(join(dir, 'store'));

/** Every episode through sessions over the store: live the first time, replayed from the records the second. */
async function throughSessions(): Promise<{ replayed: number }> {
  let replayed = 0;
  for (let e = 0; e < EPISODES; e++) {
    const session = new HarnessSession({
      store,
      callKey: (call) => `bench/harness/item-${e}/call-${call}`,
      continuation: { tokenizer, client: manager },
      model: 'policy',
      sampling: { temperature: 1, topP: 1 },
      maxCalls: CALLS,
      maxTokens: 1_000_000,
      signal: new AbortController().signal,
      onProgress: () => undefined,
      onBudgetSpent: () => undefined,
      onInfrastructureFailure: (error) => {
        throw error;
      },
    });
    const socketPath = join(dir, `session-${e}.sock`);
    const server = await serveSession(session, socketPath);
    await episode(poster({ socketPath }, '/v1/chat/completions'), e);
    server.close();
    replayed += session.replayed;
  }
  return { replayed };
}

try {
  // One episode each way first, so that no line pays for the JIT or the tokenizer's caches alone.
  await episode(poster({ host: modelUrl.hostname, port: Number(modelUrl.port) }, '/v1/chat/completions'), -1);
  const direct = await cpuPerCall(async () => {
    for (let e = 0; e < EPISODES; e++)
      await episode(poster({ host: modelUrl.hostname, port: Number(modelUrl.port) }, '/v1/chat/completions'), e);
  });
  let counts = { replayed: 0 };
  const live = await cpuPerCall(async () => {
    counts = await throughSessions();
  });
  if (counts.replayed !== 0) throw new Error('the live pass replayed calls: the store was not empty');
  const asked = model.calls;
  const replay = await cpuPerCall(async () => {
    counts = await throughSessions();
  });
  if (counts.replayed !== EPISODES * CALLS || model.calls !== asked) throw new Error('the replay pass asked the model');
  const f = (n: number) => n.toFixed(2);
  console.log(
    `cpu per model call: session live ${f(live.cpu)} ms, replayed ${f(replay.cpu)} ms, direct ${f(direct.cpu)} ms; ` +
      `the session adds ${f(live.cpu - direct.cpu)} ms live, ratio ${f(live.cpu / direct.cpu)}`,
  );
  console.log(`wall per model call: session live ${f(live.wall)} ms, replayed ${f(replay.wall)} ms, direct ${f(direct.wall)} ms`);
  console.log(
    `${EPISODES} episodes of ${CALLS} calls, observations of ${values.observation} characters; agent, session and model in this process`,
  );
} finally {
  manager.stop();
  await model.close();
  await rm(dir, { recursive: true, force: true });
}
