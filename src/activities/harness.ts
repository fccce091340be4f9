import { ApplicationFailure } from '@temporalio/common';
import { createServer, type Server } from 'node:http';
import { chmod, lchown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import type { HarnessEnd, HarnessOutcome } from '../env/harness.js';
import { HARNESS_AGENT_LIMITS } from '../env/harness.js';
import type { Liveness } from '../env/define.js';
import type { LoadedEnvironment } from '../env/loaded.js';
import { toScoreResult } from '../env/rewards.js';
import { EVENT_STREAM_HEADERS, eventStreamBody } from '../inference/chat-stream.js';
import type { Continuation } from '../inference/continuation.js';
import { PROGRESS_INTERVAL_MS } from '../inference/types.js';
import { runSandboxed, SANDBOX_DIR, type SandboxResult } from '../kits/sandbox/sandbox.js';
import type { Sampling, StoreRef } from '../schema/rollout.js';
import type { Message } from '../schema/scored-data.js';
import type { TrajectoryStore } from '../store/trajectory-store.js';
import { heartbeatEvery, itemOf, liveness } from './environment-context.js';
import {
  groupKey,
  groupWeightsVersion,
  lastAssistantText,
  saveGroupBase,
  type GroupAddress,
  type GroupState,
  type Trajectory,
} from './group-state.js';
import { HarnessSession, sessionTrajectory, type CallEvent } from './harness-session.js';

/** The workspace's path inside the sandbox, and the agent's working directory. */
export const WORKSPACE = `${SANDBOX_DIR}/work`;
/** The port the session listens on inside the sandbox's own network namespace (its loopback, nothing else). */
const SESSION_PORT = 8000;
const FORWARDER = new URL('../kits/sandbox/loopback-forward.py', import.meta.url);
// When Clotho runs as root the sandbox runs as nobody (see runSandboxed): the workspace must be nobody's to write.
const NOBODY = 65534;
const OUTPUT_TAIL = 2000;
/** How long an agent refused for its budget may take to exit by itself. */
const BUDGET_GRACE_MS = 5_000;

/** One harness rollout's address: a group's, and its sample. */
export interface HarnessRolloutInput extends GroupAddress {
  sample: number;
  sampling: Sampling;
  /** Model calls the episode may make (`max_turns`). */
  maxTurns: number;
  /** Tokens the model may generate over the episode (`max_token_length`). */
  maxTokenLength: number;
}

/** A finished rollout as the store keeps it (`…/harness/sample-<s>/result`): its trajectory and how it went. */
export interface HarnessRolloutRecord {
  trajectory: Trajectory;
  outcome: HarnessOutcome;
}

/** What `runHarness` answers: the counts the workflow and the UI show; the trajectory stays in the store. */
export interface HarnessRolloutResult {
  calls: number;
  replayed: number;
  diverged: number;
  passed: boolean;
  ended: HarnessEnd;
}

export interface HarnessDeps {
  store: TrajectoryStore;
  /** The token-in client and tokenizer of each environment: a harness session needs exact tokens. */
  continuation: (environment: string) => Continuation | undefined;
}

export const harnessKey = (address: GroupAddress, sample: number, ...parts: string[]) =>
  groupKey(address, 'harness', `sample-${sample}`, ...parts);

/** Heartbeat details of a running harness: the UI shows them on the pending activity, `clotho inspect` reads them. */
export const HarnessProgressSchema = z.object({ calls: z.number().int(), replayed: z.number().int(), last: z.string().optional() });
export type HarnessProgress = z.infer<typeof HarnessProgressSchema>;

/**
 * Runs one harness rollout (see `src/env/harness.ts`): the task's workspace written fresh, a session serving the
 * agent on a Unix socket that only the sandbox's loopback relays to, the agent sandboxed until it exits or spends its
 * budget, then the check in a fresh sandbox over the workspace. A model server that fails fails the attempt (it is
 * retried and replays what was recorded); an agent that never asked the model anything and failed is a setup error,
 * retried too, never a reward. Writes the rollout's record and returns it.
 */
export async function runHarnessRollout(
  deps: HarnessDeps,
  env: LoadedEnvironment,
  input: HarnessRolloutInput,
  live: Liveness & { heartbeatEveryMs?: number },
): Promise<HarnessRolloutRecord> {
  // From the first line to the last: installing the agent on a fresh worker (a minute for mini-swe-agent) and the
  // check both outlast the 10 s heartbeat timeout, and an attempt that timed out would go on beside the next one.
  const progress: HarnessProgress = { calls: 0, replayed: 0 };
  live.heartbeat(progress);
  const beating = setInterval(() => live.heartbeat(progress), live.heartbeatEveryMs ?? PROGRESS_INTERVAL_MS);
  try {
    return await rollout(deps, env, input, live, progress);
  } finally {
    clearInterval(beating);
  }
}

async function rollout(
  deps: HarnessDeps,
  env: LoadedEnvironment,
  input: HarnessRolloutInput,
  live: Liveness,
  progress: HarnessProgress,
): Promise<HarnessRolloutRecord> {
  const spec = env.definition.harness;
  if (!spec) throw ApplicationFailure.nonRetryable(`environment "${input.environment}" has no harness`, 'ConfigError');
  const continuation = deps.continuation(input.environment);
  if (!continuation) {
    throw ApplicationFailure.nonRetryable(
      `environment "${input.environment}" runs an agent, whose trajectories need exact tokens: give the run the policy's tokenizer (--openai.tokenizer_name) and a server that takes token-id prompts`,
      'ConfigError',
    );
  }
  const item = env.items.get(input.itemIndex);
  const agent = spec.agent(env.config);
  // An attempt cancelled meanwhile stops waiting; the install goes on for the next one (ensure is once per process).
  if (agent.ensure) await untilAborted(agent.ensure(), live.signal);

  const dir = await mkdtemp(join(tmpdir(), 'clotho-harness-'));
  const stop = new AbortController();
  const onAbort = () => stop.abort(live.signal.reason);
  live.signal.addEventListener('abort', onAbort, { once: true });
  // Set by the session's callbacks while the agent runs.
  const episode: { ended: HarnessEnd; failure: Error | null; grace?: NodeJS.Timeout } = { ended: 'exited', failure: null };
  const session = new HarnessSession({
    store: deps.store,
    callKey: (call) => harnessKey(input, input.sample, `call-${call}`),
    continuation,
    model: 'clotho-policy',
    sampling: input.sampling,
    maxCalls: input.maxTurns,
    maxTokens: input.maxTokenLength,
    signal: stop.signal,
    onProgress(event?: CallEvent) {
      if (event)
        Object.assign(progress, { calls: event.call + 1, last: event.summary }, event.replayed ? { replayed: progress.replayed + 1 } : {});
      live.heartbeat(progress);
    },
    onBudgetSpent(end) {
      // An agent told its budget is spent usually exits by itself, with what it printed; one that goes on is stopped.
      episode.ended = end;
      episode.grace ??= setTimeout(() => stop.abort(new Error(`budget spent: ${end}`)), BUDGET_GRACE_MS);
    },
    onInfrastructureFailure(error) {
      episode.failure ??= error;
      stop.abort(error);
    },
  });
  let server: Server | undefined;
  try {
    const workspace = join(dir, 'work');
    await writeFiles(workspace, spec.workspace(item, env.config));
    // The session's socket records the policy's trajectory: only the sandbox's user reaches it (issue 38, finding 9).
    const socketDir = join(dir, 'session');
    await mkdir(socketDir, { mode: 0o700 });
    const socket = join(socketDir, 'model.sock');
    const owner = sandboxOwner();
    server = await serveSession(session, socket, owner);
    if (owner) {
      await chownTree(workspace);
      await lchown(socketDir, owner.uid, owner.gid);
      await lchown(dir, owner.uid, owner.gid);
    }

    const limits = { ...HARNESS_AGENT_LIMITS, ...agent.limits };
    const baseUrl = `http://127.0.0.1:${SESSION_PORT}/v1`;
    const task = spec.task(item, env.config);
    const command = agent.command({ baseUrl, model: 'clotho-policy', task, workspace: WORKSPACE, maxCalls: input.maxTurns });
    let run: SandboxResult | null = null;
    try {
      run = await runSandboxed({
        // The relay listens before the agent starts (its parent exits once the port is bound).
        command: ['sh', '-c', `python3 ${SANDBOX_DIR}/.clotho/forward.py "$0" ${SESSION_PORT} && exec "$@"`, socket, ...command],
        files: { '.clotho/forward.py': await readFile(FORWARDER, 'utf8'), ...agent.files },
        readOnlyBinds: [socketDir, ...(agent.readOnlyBinds ?? [])],
        writableBinds: [{ host: workspace, path: WORKSPACE }],
        cwd: WORKSPACE,
        env: { ...agent.env, OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: 'clotho', OPENAI_MODEL: 'clotho-policy' },
        limits,
        signal: stop.signal,
      });
    } catch (error) {
      // Stopped for its budget: the episode ends there and is checked. Any other abort or setup error is the attempt's.
      const budgetSpent = episode.ended !== 'exited' && !episode.failure && !live.signal.aborted;
      if (!budgetSpent) throw episode.failure ?? error;
    }
    if (episode.failure) throw episode.failure;
    if (run?.timedOut) episode.ended = 'time';
    if (session.calls === 0 && run && run.exitCode !== 0) {
      throw new Error(
        `agent ${agent.name} exited with ${run.exitCode ?? run.killedBy} before asking the model anything: ${tail(run.stderr || run.stdout)}`,
      );
    }
    // The check's files are put back inside a sandbox: the workspace is the agent's now, and a link it left there
    // (`test_x.py -> /etc/passwd`) must lead nowhere the host would write for it.
    const check = spec.check(item, env.config);
    const restore = Object.keys(check.files ?? {}).length > 0;
    const checked = await runSandboxed({
      command: restore
        ? ['sh', '-c', `cp -R --remove-destination ${SANDBOX_DIR}/.check/. ${WORKSPACE}/ && exec "$@"`, 'check', ...check.command]
        : check.command,
      files: Object.fromEntries(Object.entries(check.files ?? {}).map(([name, content]) => [`.check/${name}`, content])),
      writableBinds: [{ host: workspace, path: WORKSPACE }],
      cwd: WORKSPACE,
      limits: { wallTimeMs: 60_000, cpuSeconds: 60, ...check.limits },
      signal: live.signal,
    });
    const outcome: HarnessOutcome = {
      agent: agent.name,
      ended: episode.ended,
      exitCode: run?.exitCode ?? null,
      output: tail(`${run?.stdout ?? ''}${run?.stderr ?? ''}`),
      calls: session.calls,
      replayed: session.replayed,
      diverged: session.diverged,
      check: {
        exitCode: checked.exitCode,
        passed: checked.exitCode === 0 && !checked.timedOut,
        output: tail(`${checked.stdout}${checked.stderr}`),
        timedOut: checked.timedOut,
      },
    };
    const record: HarnessRolloutRecord = { trajectory: trajectoryOf(session, outcome, input.maxTurns), outcome };
    // A cancelled attempt leaves the result to the one that replaced it, as its session leaves the calls.
    live.signal.throwIfAborted();
    await deps.store.put(harnessKey(input, input.sample, 'result'), record);
    return record;
  } finally {
    clearTimeout(episode.grace);
    live.signal.removeEventListener('abort', onAbort);
    server?.close();
    server?.closeAllConnections();
    await rm(dir, { recursive: true, force: true });
  }
}

/** `work`, or a rejection with the signal's reason as soon as it aborts (the work itself goes on). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([work, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}

/** The rollout's trajectory: the sequence the last call grew, and the conversation it answered. */
function trajectoryOf(session: HarnessSession, outcome: HarnessOutcome, maxCalls: number): Trajectory {
  return sessionTrajectory(session, { state: outcome, truncated: outcome.ended !== 'exited' || session.calls >= maxCalls });
}

/** Who the sandbox runs as when it is not this process's user: nobody, when Clotho runs as root (see runSandboxed). */
function sandboxOwner(): { uid: number; gid: number } | undefined {
  return process.getuid?.() === 0 ? { uid: NOBODY, gid: NOBODY } : undefined;
}

/**
 * Serves the session's chat API on a Unix socket that only its owner may connect to (mode 0600): `owner`, the
 * sandbox's user, or this process's. Its folder must be the owner's alone too.
 */
export async function serveSession(session: HarnessSession, socket: string, owner?: { uid: number; gid: number }): Promise<Server> {
  const server = createServer((request, response) => {
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    const path = (request.url ?? '').split('?')[0]!;
    if (request.method === 'GET' && path.endsWith('/models')) {
      reply(200, { object: 'list', data: [{ id: 'clotho-policy', object: 'model', owned_by: 'clotho' }] });
      return;
    }
    if (request.method !== 'POST' || !path.endsWith('/chat/completions')) {
      reply(404, { error: { message: `no route ${request.method} ${path}`, type: 'invalid_request_error', code: 404 } });
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch (error) {
        reply(400, {
          error: { message: `request body is not JSON: ${(error as Error).message}`, type: 'invalid_request_error', code: 400 },
        });
        return;
      }
      session.chat(body).then(
        (answer) => {
          if (!answer.events) return reply(answer.status, answer.body);
          response.writeHead(answer.status, EVENT_STREAM_HEADERS);
          response.end(eventStreamBody(answer.events));
        },
        (error: Error) => reply(500, { error: { message: error.message, type: 'server_error', code: 500 } }),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, resolve);
  });
  await chmod(socket, 0o600);
  if (owner) await lchown(socket, owner.uid, owner.gid);
  return server;
}

async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  await mkdir(root, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    const path = join(root, name);
    if (!path.startsWith(`${root}/`)) throw new Error(`harness: workspace file "${name}" must be a relative path inside it`);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content);
  }
}

/** Gives the files Clotho wrote to nobody, before the agent runs (links are never followed, though none are there yet). */
async function chownTree(root: string): Promise<void> {
  await lchown(root, NOBODY, NOBODY);
  for (const entry of await readdir(root, { withFileTypes: true, recursive: true })) {
    await lchown(join(entry.parentPath, entry.name), NOBODY, NOBODY);
  }
}

const tail = (text: string) => (text.length > OUTPUT_TAIL ? `…${text.slice(-OUTPUT_TAIL)}` : text);

/**
 * One item's harness episode outside Temporal (`clotho evaluate`): a rollout with the given sampling, its records in
 * `deps.store` (a throwaway store: nothing there is meant to replay), parsed and scored as a group's would be.
 */
export async function evaluateHarnessItem(
  deps: HarnessDeps,
  env: LoadedEnvironment,
  input: HarnessRolloutInput,
): Promise<{ messages: Message[]; completion: string; score: number; metrics: Record<string, number> }> {
  const live = { signal: new AbortController().signal, heartbeat: () => undefined };
  const { trajectory, outcome } = await runHarnessRollout(deps, env, input, live);
  const item = env.items.get(input.itemIndex);
  const completion = lastAssistantText(trajectory);
  const context = {
    item,
    config: env.config,
    sample: input.sample,
    toolCalls: [],
    malformedToolCalls: [],
    messages: trajectory.messages,
    finishReason: trajectory.finishReason ?? 'stop',
    state: outcome,
    harness: outcome,
    ...live,
  };
  const parsed = await env.definition.parse(completion, item, context);
  const judge = {
    complete: () => Promise.reject(new Error('a harness environment evaluated by `clotho evaluate` has no judge model')),
  };
  const scored = toScoreResult(
    await env.definition.score({ ...context, parsed, completion, turnRewards: [], judge, group: null, judgements: {} }),
  );
  return { messages: trajectory.messages, completion, score: scored.score, metrics: scored.metrics ?? {} };
}

/** What gathering a harness group answers: its state, and what the workflow counts. */
export interface GatherHarnessResult {
  state: StoreRef;
  completionTokens: number[];
  /** Model calls of the group's longest rollout. */
  turns: number;
  weightsVersion?: number;
}

/**
 * The harness activities: `runHarness` (one rollout, on the env queue, heartbeating its calls so far) and
 * `gatherHarness` (the group's state from its rollouts' records, local, before parse and score).
 */
export function createHarnessActivities(deps: HarnessDeps & { environments: Record<string, LoadedEnvironment> }) {
  return {
    async runHarness(input: HarnessRolloutInput): Promise<HarnessRolloutResult> {
      // A rollout whose record was written finished: an attempt that died before reporting it is not run again.
      const done = await deps.store.tryGet<HarnessRolloutRecord>(harnessKey(input, input.sample, 'result'));
      const { env } = itemOf(deps.environments, input);
      const { outcome } = done ?? (await runHarnessRollout(deps, env, input, { ...liveness(), heartbeatEveryMs: heartbeatEvery() }));
      return {
        calls: outcome.calls,
        replayed: outcome.replayed,
        diverged: outcome.diverged.length,
        passed: outcome.check.passed,
        ended: outcome.ended,
      };
    },

    async gatherHarness(input: GroupAddress & { groupSize: number }): Promise<GatherHarnessResult> {
      const { env, item } = itemOf(deps.environments, input);
      const records = await Promise.all(
        Array.from({ length: input.groupSize }, (_, sample) => deps.store.get<HarnessRolloutRecord>(harnessKey(input, sample, 'result'))),
      );
      const state: GroupState = {
        itemIndex: input.itemIndex,
        trajectories: records.map((r) => r.trajectory),
        groupOverrides: env.definition.groupOverrides?.(item, env.config) ?? null,
        tools: null,
        stop: null,
      };
      const weightsVersion = groupWeightsVersion(state);
      return {
        state: await saveGroupBase(deps.store, groupKey(input, 'harness', 'gathered'), state),
        completionTokens: records.map((r) => r.trajectory.completionTokens),
        turns: Math.max(...records.map((r) => r.outcome.calls)),
        ...(weightsVersion === undefined ? {} : { weightsVersion }),
      };
    },
  };
}

export type HarnessActivities = ReturnType<typeof createHarnessActivities>;
